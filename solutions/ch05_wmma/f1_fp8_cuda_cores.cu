// f1 — exercise 4's solution: the FP8 ops on CUDA cores, any GPU from sm_80.
//
//   f1_fp8_quantize     Q = E4M3(X / scale): eight elements per thread (one 16-byte load of BF16,
//                       one 8-byte store of E4M3) where the count and the pointers allow, else one;
//                       the conversion is __nv_cvt_float2_to_fp8x2 with __NV_SATFINITE (a single
//                       cvt.rn.satfinite.e4m3x2.f32 on sm_89+, the same rounding in software
//                       before): values past 448 saturate instead of becoming NaN.
//   f1_fp8_gemm         D = scale_a * scale_b * A * B^T: 32 x 32 output tiles, 16 of K per step
//   f1_fp8_gemm_block   staged in shared memory as floats (E4M3 decodes exactly, and the product
//                       of two is exact in FP32); FP32 sums per block of 128 along K, added into
//                       the total (times the block's two scales for the block-scaled op).
// Slow next to the tensor cores (v9, v10: Hopper), but right on every GPU and every shape the
// ops allow: the ladder's first FP8 step, as v1 is for BF16.
//
// Run: build/all/bin/ch05_tests --gtest_filter='gemm_fp8*/f1_fp8*:fp8_quantize*'
#include "ladder.cuh"
#include "runtime/errors.cuh"

namespace ch05::solution {
namespace {

constexpr int kQuantThreads = 256;

__device__ __forceinline__ uint16_t to_e4m3x2(float lo, float hi) {
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
}

// n elements; `vector`: n % 8 == 0 and both pointers 16-byte aligned.
__global__ void quantize_kernel(size_t n, const __nv_bfloat16* __restrict__ X, const float* __restrict__ scale,
                                __nv_fp8_e4m3* __restrict__ Q, bool vector) {
  const float inv = 1.0f / __ldg(scale);  // one division per thread; x * inv is within one E4M3 step
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (vector) {
    for (; i < n / 8; i += stride) {
      const uint4 raw = reinterpret_cast<const uint4*>(X)[i];  // 8 BF16 values
      const __nv_bfloat162* x = reinterpret_cast<const __nv_bfloat162*>(&raw);
      uint2 out;
      uint16_t* o = reinterpret_cast<uint16_t*>(&out);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = __bfloat1622float2(x[k]);
        o[k] = to_e4m3x2(f.x * inv, f.y * inv);
      }
      reinterpret_cast<uint2*>(Q)[i] = out;  // 8 E4M3 values
    }
  } else {
    for (; i < n; i += stride) {
      Q[i].__x = __nv_cvt_float_to_fp8(__bfloat162float(X[i]) * inv, __NV_SATFINITE, __NV_E4M3);
    }
  }
}

constexpr int kTile = 32, kStep = 16;  // 32 x 32 outputs per block, 16 of K per step

// One block: a 32 x 32 tile of D, 32 x 8 threads, each computing 4 rows of one column.
__global__ void gemm_kernel(int M, int N, int K, const __nv_fp8_e4m3* __restrict__ A,
                            const __nv_fp8_e4m3* __restrict__ B, const float* __restrict__ scale_a,
                            const float* __restrict__ scale_b, bool blocked, __nv_bfloat16* __restrict__ D) {
  __shared__ float a_tile[kTile][kStep + 1];     // (32 rows of A, 16 along K)
  __shared__ float b_tile[kTile][kStep + 1];     // (32 rows of B, 16 along K)
  const int tx = threadIdx.x, ty = threadIdx.y;  // tx: column in the tile; ty: rows ty, ty + 8, ...
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile, j = col0 + tx;
  const int ld_b = fp8_scale_b_ld(K);
  float total[4] = {0, 0, 0, 0}, part[4] = {0, 0, 0, 0};
  for (int p0 = 0; p0 < K; p0 += kStep) {  // K is a multiple of 16
    for (int e = ty * kTile + tx; e < kTile * kStep; e += kTile * 8) {
      const int r = e / kStep, k = e % kStep;
      a_tile[r][k] = row0 + r < M ? float(A[size_t(row0 + r) * K + p0 + k]) : 0.0f;
      b_tile[r][k] = col0 + r < N ? float(B[size_t(col0 + r) * K + p0 + k]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kStep; ++k) {
      const float b = b_tile[tx][k];
#pragma unroll
      for (int u = 0; u < 4; ++u) part[u] += a_tile[ty + 8 * u][k] * b;
    }
    __syncthreads();
    if ((p0 + kStep) % kFp8ScaleBlock == 0 || p0 + kStep == K) {  // the end of a block of 128
      const int kb = p0 / kFp8ScaleBlock;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = row0 + ty + 8 * u;
        float s = 1.0f;
        if (blocked && i < M && j < N)
          s = scale_a[size_t(kb) * M + i] * scale_b[size_t(j / kFp8ScaleBlock) * ld_b + kb];
        total[u] += part[u] * s;
        part[u] = 0.0f;
      }
    }
  }
  const float s = blocked ? 1.0f : scale_a[0] * scale_b[0];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int i = row0 + ty + 8 * u;
    if (i < M && j < N) D[size_t(i) * N + j] = __float2bfloat16_rn(total[u] * s);
  }
}

void gemm(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
          const float* scale_b, bool blocked, __nv_bfloat16* D, cudaStream_t stream) {
  check_fp8_gemm_args(M, N, K, blocked ? "f1_fp8_gemm_block" : "f1_fp8_gemm");
  if (M == 0 || N == 0) return;
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile), block(kTile, 8);
  if (grid.y > 65535) throw std::invalid_argument("f1_fp8_gemm: M > 2,097,120 rows");
  gemm_kernel<<<grid, block, 0, stream>>>(M, N, K, A, B, scale_a, scale_b, blocked, D);
  WB_CHECK_LAUNCH();
}

}  // namespace

void f1_fp8_quantize(int M, int K, const __nv_bfloat16* X, const float* scale, __nv_fp8_e4m3* Q, cudaStream_t stream) {
  if (M <= 0 || K <= 0) return;
  const size_t n = size_t(M) * K;
  const bool vector = n % 8 == 0 && reinterpret_cast<uintptr_t>(X) % 16 == 0 && reinterpret_cast<uintptr_t>(Q) % 8 == 0;
  const size_t work = vector ? n / 8 : n;
  const unsigned blocks = unsigned(std::min<size_t>((work + kQuantThreads - 1) / kQuantThreads, 8192));
  quantize_kernel<<<blocks, kQuantThreads, 0, stream>>>(n, X, scale, Q, vector);
  WB_CHECK_LAUNCH();
}

void f1_fp8_gemm(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                 const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  gemm(M, N, K, A, B, scale_a, scale_b, false, D, stream);
}

void f1_fp8_gemm_block(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                       const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  gemm(M, N, K, A, B, scale_a, scale_b, true, D, stream);
}

}  // namespace ch05::solution
