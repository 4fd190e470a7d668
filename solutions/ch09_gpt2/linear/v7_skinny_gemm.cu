// Step 7 — a few tokens at once: v4's GEMV over up to 8 rows of x per read of W.
//
// Batched decode (B sequences, one token each) multiplies B rows of x by the same W. With B
// from 2 to 16 that is a "skinny" GEMM: far too few rows to fill tensor-core tiles (v3
// wastes most of each 16- or 64-row tile, and its grid has N / 64 blocks), and still
// memory-bound, since every weight is used for only B multiply-adds. So this step keeps v4's
// shape — one warp per row n of W, lane l reading 16-byte pieces l, l + 32, ... — and lets
// each piece of W, once in registers, meet the same piece of R = 8 rows of x: R sums per
// lane, R shuffle reductions at the end. W is read once per 8 rows instead of once per row;
// the rows of x are small and stay in L1/L2. The grid's second dimension takes the rows 8 at
// a time, so any M works (past 16 rows or so, v3's tensor cores win: the model switches).
// Rows that are not 16-byte aligned (K * sizeof(T) % 16 != 0) take the scalar loop.
// Run: build/ch09/bin/ch09_bench --op=linear_bias/bf16 --full
#include <cstdint>
#include <stdexcept>
#include <string>

#include "runtime/errors.cuh"
#include "device/reduce.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

constexpr int kWarps = 8;  // rows of W per block, one per warp
constexpr int kRows = 8;   // rows of x per pass over W

// grid (ceil(N / kWarps), ceil(M / kRows)), block (32 * kWarps): warp w owns row
// n = blockIdx.x * kWarps + w of W, and rows m0 .. m0 + rows - 1 of x and y, m0 = blockIdx.y * kRows.
template <class T>
__global__ void __launch_bounds__(32 * kWarps)
    skinny_kernel(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, bool vec) {
  const int lane = threadIdx.x % 32, n = blockIdx.x * kWarps + threadIdx.x / 32;
  if (n >= N) return;  // a whole warp leaves together
  const int m0 = blockIdx.y * kRows;
  const int rows = min(kRows, M - m0);
  const T* row = w + size_t(n) * K;
  const T* xs = x + size_t(m0) * K;
  float acc[kRows] = {};
  if (vec) {
    constexpr int kPer = 16 / sizeof(T);  // elements per 16-byte piece
    const int pieces = K / kPer;
    const uint4* w4 = reinterpret_cast<const uint4*>(row);
    for (int p = lane; p < pieces; p += 32) {
      const uint4 wp = __ldg(w4 + p);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < rows) acc[r] += dot16(wp, __ldg(reinterpret_cast<const uint4*>(xs + size_t(r) * K) + p), T{});
      }
    }
  } else {
    for (int k = lane; k < K; k += 32) {
      const float wk = to_float(row[k]);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < rows) acc[r] += wk * to_float(xs[size_t(r) * K + k]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const float a = wb::warp_sum(acc[r]);
    if (lane == 0 && r < rows) y[size_t(m0 + r) * N + n] = epilogue(a, b, n, epi);
  }
}

}  // namespace

template <class T>
void linear_skinny(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  if (ceil_div(M, kRows) > 65535) {
    throw std::invalid_argument("M = " + std::to_string(M) +
                                ": above the grid's 65535 passes of 8 rows; this step is "
                                "for a few rows (v3 takes large M)");
  }
  // Every row of x starts 16-byte aligned when the first does and K * sizeof(T) is a multiple of 16.
  const bool vec = (size_t(K) * sizeof(T)) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(w) % 16 == 0;
  skinny_kernel<T>
      <<<dim3(ceil_div(N, kWarps), ceil_div(M, kRows)), 32 * kWarps, 0, stream>>>(x, w, b, y, M, N, K, epi, vec);
  WB_CHECK_LAUNCH();
}

template void linear_skinny<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int, int, Epilogue, cudaStream_t);
template void linear_skinny<float>(const float*, const float*, const float*, float*, int, int, int, Epilogue,
                                   cudaStream_t);

}  // namespace ch09::solution
