// v3 — the convolution as an implicit GEMM on tensor cores (WMMA), BN + ReLU fused.
//
// The GEMM view (docs/ch10-conv.md has the picture):
//   D (M x K) = A (M x Kg) * B (Kg x K)   M = N P Q output pixels, Kg = R S C, K filters
//   A[m][kk]  = x[n][p*stride - pad + r][q*stride - pad + s][c]  (0 in the padding)
//               m = (n P + p) Q + q,  kk = (r S + s) C + c
//   B[kk][k]  = w[k Kg + kk]   (KRSC: column k of B is row k of w, contiguous in kk)
//   y[m K + k] = epilogue(D[m][k])  (NPQK: row m of D is one output pixel's K channels)
// A is never built in memory: the tile loader computes each element's address from (m, kk)
// ("implicit im2col"). With C % 8 == 0, the 8 values kk .. kk + 7 (kk a multiple of 8) share
// one tap (r, s) and are 16 contiguous bytes of x: one uint4 load. Otherwise every element
// is loaded alone. The rest is chapter 5's WMMA GEMM with (64, 64) block tiles and 2 x 2
// warps of (32, 32); B stored [n][kk] in shared memory is WMMA's col_major matrix_b.
//
// The fused epilogue: the accumulators are staged in shared memory (FP32), the block folds
// BatchNorm into scale and shift for its 64 channels once, and writes every output once:
// relu((acc + bias) * scale + shift + residual), rounded to BF16. Unfused (the reference's
// "separate" pipeline), the conv's output makes an extra round trip through DRAM.
//
// From conv_common.cuh: the launch (the GEMM sizes, the grid, the instance for C:
// launch_implicit_gemm) and the folded BN epilogue.
//
// Run: ctest --preset ch10-solution -R conv2d_bn_relu/bf16/v3
//      build/ch10/bin/ch10_bench --benchmark_filter=conv2d_bn_relu
#include <mma.h>

#include <cstdint>

#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "conv_common.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

using namespace nvcuda;

constexpr int BM = 64, BN = 64, BK = 32, kWarps = 4, kThreads = 32 * kWarps;
constexpr int kLd = BK + 8;   // 40 BF16 = 80 bytes per tile row (a multiple of 16; fragments 32-byte aligned)
constexpr int kLdC = BN + 4;  // 68 floats per staging row
static_assert(BM == 64 && BN == 64 && kWarps == 4, "2 x 2 warps of 32 x 32");
static_assert(BK % 16 == 0 && kLd % 8 == 0 && kLdC % 4 == 0, "WMMA ldm rules: 16-bit types x8, float x4");

struct Dims {  // ConvShape plus what every thread needs again and again
  ConvShape s;
  int P, Q, M, Kg;
};

// A (BM, BK) tile of the implicit im2col matrix: rows m0 .., columns kk0 .., zeros outside.
template <bool kVec>
__device__ __forceinline__ void load_a(bf16 (*sA)[kLd], const bf16* __restrict__ x, const Dims& d, int m0, int kk0) {
  const ConvShape& s = d.s;
  if constexpr (kVec) {
    constexpr int kPieces = BK / 8;
    for (int e = threadIdx.x; e < BM * kPieces; e += kThreads) {
      const int row = e / kPieces, col = e % kPieces * 8, m = m0 + row, kk = kk0 + col;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (m < d.M && kk < d.Kg) {
        const int q = m % d.Q, p = m / d.Q % d.P, n = m / (d.Q * d.P);
        const int rs = kk / s.C, c = kk - rs * s.C, r = rs / s.S, t = rs - r * s.S;
        const int h = p * s.stride - s.pad + r, w = q * s.stride - s.pad + t;
        if (h >= 0 && h < s.H && w >= 0 && w < s.W) {
          v = *reinterpret_cast<const uint4*>(x + ((int64_t(n) * s.H + h) * s.W + w) * s.C + c);
        }
      }
      *reinterpret_cast<uint4*>(&sA[row][col]) = v;
    }
  } else {
    // Column kk is the same for all of a thread's elements (kThreads is a multiple of BK).
    static_assert(kThreads % BK == 0, "one column per thread");
    const int col = threadIdx.x % BK, kk = kk0 + col;
    const int rs = kk / s.C, c = kk - rs * s.C, r = rs / s.S, t = rs - r * s.S;
    for (int row = threadIdx.x / BK; row < BM; row += kThreads / BK) {
      const int m = m0 + row;
      bf16 v = __float2bfloat16(0.0f);
      if (m < d.M && kk < d.Kg) {
        const int q = m % d.Q, p = m / d.Q % d.P, n = m / (d.Q * d.P);
        const int h = p * s.stride - s.pad + r, w = q * s.stride - s.pad + t;
        if (h >= 0 && h < s.H && w >= 0 && w < s.W) v = x[((int64_t(n) * s.H + h) * s.W + w) * s.C + c];
      }
      sA[row][col] = v;
    }
  }
}

// A (BN, BK) tile of w: filters k0 .., columns kk0 .. of each, zeros outside.
template <bool kVec>
__device__ __forceinline__ void load_b(bf16 (*sB)[kLd], const bf16* __restrict__ w, const Dims& d, int k0, int kk0) {
  if constexpr (kVec) {
    constexpr int kPieces = BK / 8;
    for (int e = threadIdx.x; e < BN * kPieces; e += kThreads) {
      const int row = e / kPieces, col = e % kPieces * 8, k = k0 + row, kk = kk0 + col;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (k < d.s.K && kk < d.Kg) v = *reinterpret_cast<const uint4*>(w + int64_t(k) * d.Kg + kk);  // kk + 8 <= Kg
      *reinterpret_cast<uint4*>(&sB[row][col]) = v;
    }
  } else {
    for (int e = threadIdx.x; e < BN * BK; e += kThreads) {
      const int row = e / BK, col = e % BK, k = k0 + row, kk = kk0 + col;
      sB[row][col] = (k < d.s.K && kk < d.Kg) ? w[int64_t(k) * d.Kg + kk] : __float2bfloat16(0.0f);
    }
  }
}

// grid (ceil(M / BM), ceil(K / BN)), block (128).
template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    implicit_gemm_wmma_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                              const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d) {
  __shared__ __align__(128) bf16 sA[BM][kLd];    // (BM, BK) tile of A: pixels x kk
  __shared__ __align__(128) bf16 sB[BN][kLd];    // (BN, BK) tile of B, stored [k][kk]
  __shared__ __align__(128) float sC[BM][kLdC];  // (BM, BN) accumulators, for the epilogue
  __shared__ Folded sF[BN];                      // the folded BN of the block's channels

  const int m0 = blockIdx.x * BM, k0 = blockIdx.y * BN;
  const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  if (threadIdx.x < BN && k0 + int(threadIdx.x) < d.s.K) sF[threadIdx.x] = fold_bn(bn, k0 + threadIdx.x);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (auto& row : acc) {
    for (auto& f : row) wmma::fill_fragment(f, 0.0f);
  }
  for (int kk0 = 0; kk0 < d.Kg; kk0 += BK) {
    load_a<kVec>(sA, x, d, m0, kk0);
    load_b<kVec>(sB, w, d, k0, kk0);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &sA[wm * 32 + i * 16][ks], kLd);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &sB[wn * 32 + j * 16][ks], kLd);
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
    }
    __syncthreads();  // the next step overwrites the tiles
  }

  // The epilogue, on the complete sums only.
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(&sC[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], kLdC, wmma::mem_row_major);
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < BM * BN; e += kThreads) {
    const int row = e / BN, col = e % BN, m = m0 + row, k = k0 + col;
    if (m >= d.M || k >= d.s.K) continue;
    const int64_t at = int64_t(m) * d.s.K + k;
    const float res = residual ? __bfloat162float(residual[at]) : 0.0f;
    y[at] = __float2bfloat16(apply_epilogue(sC[row][col], sF[col], res));
  }
}

}  // namespace

void v3_implicit_gemm_wmma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                           cudaStream_t stream) {
  launch_implicit_gemm<BM, BN, kThreads, Dims>(implicit_gemm_wmma_kernel<true>, implicit_gemm_wmma_kernel<false>, x, w,
                                               bn, residual, y, s, stream);
}

}  // namespace ch10::solution
