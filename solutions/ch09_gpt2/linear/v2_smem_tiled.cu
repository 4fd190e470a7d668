// Step 2 — shared-memory tiles on CUDA cores (chapter 4's idea with W stored [N, K]).
//
// A block owns a (64, 64) tile of y. Per step of k it stages a (64, 16) tile of x and a
// (64, 16) tile of W — 64 ROWS of W, since row n of W holds output n's weights — in shared
// memory, stored k-major (sX[k][m], sW[k][n]) so that the inner loop reads one column of each.
// Each of the 256 threads computes 4 x 4 outputs, rows ty + 16 i and columns tx + 16 j, so
// that a warp's stores of one i land on consecutive columns. Every x and W element now comes
// from global memory once per tile instead of once per output. Used by the model's FP32
// path; for BF16 the tensor cores of step 3 take over.
// Run: build/ch09/bin/ch09_bench --op=linear_bias/f32
#include "runtime/errors.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

constexpr int BM = 64, BN = 64, BK = 16, kThreads = 256;
static_assert(BM == BN && BM * BK % kThreads == 0, "one loop stages both tiles: same row count");

// grid (ceil(N / BN), ceil(M / BM)), block (256).
template <class T>
__global__ void __launch_bounds__(kThreads)
    linear_tiled_kernel(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi) {
  __shared__ float sX[BK][BM + 1];  // (BK, BM) tile of x, k-major; +1 breaks the store conflicts
  __shared__ float sW[BK][BN + 1];  // (BK, BN) tile of W, k-major
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[4][4] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
    // 1024 elements per tile, 4 per thread; consecutive threads take consecutive k of a row.
    for (int e = tid; e < BM * BK; e += kThreads) {
      const int r = e / BK, k = e % BK, gk = k0 + k;
      const int gm = m0 + r, gn = n0 + r;
      sX[k][r] = (gm < M && gk < K) ? to_float(x[size_t(gm) * K + gk]) : 0.0f;
      sW[k][r] = (gn < N && gk < K) ? to_float(w[size_t(gn) * K + gk]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[4], bw[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = sX[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bw[j] = sW[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * bw[j];
    }
    __syncthreads();  // the tiles are overwritten next step
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty + 16 * i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tx + 16 * j;
      if (n < N) y[size_t(m) * N + n] = epilogue(acc[i][j], b, n, epi);
    }
  }
}

}  // namespace

template <class T>
void linear_tiled(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  linear_tiled_kernel<T><<<dim3(ceil_div(N, BN), ceil_div(M, BM)), kThreads, 0, stream>>>(x, w, b, y, M, N, K, epi);
  WB_CHECK_LAUNCH();
}

template void linear_tiled<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int, int, Epilogue, cudaStream_t);
template void linear_tiled<float>(const float*, const float*, const float*, float*, int, int, int, Epilogue,
                                  cudaStream_t);

}  // namespace ch09::solution
