// Step 3 — BF16 tensor cores with the epilogue fused (the prefill GEMM of the BF16 model).
//
// A block of 4 warps owns a (64, 64) tile of y; each warp a (32, 32) quarter, 2 x 2 WMMA
// accumulators of 16 x 16 (FP32). Per step of k (32 wide) the block stages a (64, 32) tile
// of x and a (64, 32) tile of W in shared memory — 16-byte loads when rows are 16-byte
// aligned (K % 8 == 0), element by element otherwise, zeros outside the matrices.
//
// Why W needs no transpose: WMMA's matrix_b is (K x N). Stored col_major with ldm = L,
// element (k, n) sits at n * L + k — which is exactly row n, column k of our W tile [BN][BK].
//
// The fused epilogue: the accumulators go to a shared-memory staging tile (FP32), and the
// block then walks its 64 x 64 outputs once: + bias, GELU, one rounding to BF16, coalesced
// stores. Without it, x · Wᵀ would be written, read back for the bias, written again, read
// back for GELU: three extra trips of M x N elements through DRAM.
// Run: build/ch09/bin/ch09_bench --op=linear_bias_gelu/bf16
#include <mma.h>

#include <cstdint>

#include "runtime/errors.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

using namespace nvcuda;

constexpr int BM = 64, BN = 64, BK = 32, kWarps = 4, kThreads = 32 * kWarps;
constexpr int kLd =
    BK + 8;  // smem row of x / W tiles: 40 BF16 = 80 bytes (a multiple of 16; fragments 32-byte aligned)
constexpr int kLdC = BN + 4;  // staging row: 68 floats = 272 bytes
static_assert(BM == 2 * 32 && BN == 2 * 32 && kWarps == 4, "2 x 2 warps of 32 x 32");
static_assert(BK % 16 == 0 && kLd % 8 == 0 && kLdC % 4 == 0, "WMMA ldm rules: 16-bit types x8, float x4");

// Stages rows [row0, row0 + 64) x columns [k0, k0 + BK) of a row-major (rows, K) matrix into
// s[64][kLd], zeros outside. vec: 16-byte loads (K % 8 == 0 and the base 16-byte aligned).
__device__ __forceinline__ void stage(bf16 (*s)[kLd], const bf16* g, int rows, int K, int row0, int k0, bool vec) {
  if (vec) {
    constexpr int kPieces = BK / 8;  // 16-byte pieces per tile row
    for (int c = threadIdx.x; c < 64 * kPieces; c += kThreads) {
      const int r = c / kPieces, k = (c % kPieces) * 8, gr = row0 + r, gk = k0 + k;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (gr < rows && gk < K) v = *reinterpret_cast<const uint4*>(g + size_t(gr) * K + gk);  // gk + 8 <= K
      *reinterpret_cast<uint4*>(&s[r][k]) = v;
    }
  } else {
    for (int e = threadIdx.x; e < 64 * BK; e += kThreads) {
      const int r = e / BK, k = e % BK, gr = row0 + r, gk = k0 + k;
      s[r][k] = (gr < rows && gk < K) ? g[size_t(gr) * K + gk] : __float2bfloat16(0.0f);
    }
  }
}

// grid (ceil(N / 64), ceil(M / 64)), block (128).
__global__ void __launch_bounds__(kThreads) linear_wmma_kernel(const bf16* x, const bf16* w, const bf16* b, bf16* y,
                                                               int M, int N, int K, Epilogue epi, bool vec) {
  __shared__ __align__(128) bf16 sX[BM][kLd];    // (BM, BK) tile of x
  __shared__ __align__(128) bf16 sW[BN][kLd];    // (BN, BK) tile of W: BN rows of W
  __shared__ __align__(128) float sC[BM][kLdC];  // (BM, BN) accumulators, for the epilogue
  const int warp = threadIdx.x / 32, wm = (warp / 2) * 32, wn = (warp % 2) * 32;  // the warp's quarter
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    stage(sX, x, M, K, m0, k0, vec);
    stage(sW, w, N, K, n0, k0, vec);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &sX[wm + 16 * i][kk], kLd);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &sW[wn + 16 * j][kk], kLd);  // (k, n) at n*kLd + k
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();  // the tiles are overwritten next step
  }

  // The fused epilogue: stage, then bias + GELU + one rounding per element, coalesced stores.
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&sC[wm + 16 * i][wn + 16 * j], acc[i][j], kLdC, wmma::mem_row_major);
  __syncthreads();
  for (int e = threadIdx.x; e < BM * BN; e += kThreads) {
    const int r = e / BN, c = e % BN, m = m0 + r, n = n0 + c;
    if (m < M && n < N) y[size_t(m) * N + n] = epilogue(sC[r][c], b, n, epi);
  }
}

}  // namespace

void linear_wmma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                 cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  const bool vec = K % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  linear_wmma_kernel<<<dim3(ceil_div(N, BN), ceil_div(M, BM)), kThreads, 0, stream>>>(x, w, b, y, M, N, K, epi, vec);
  WB_CHECK_LAUNCH();
}

}  // namespace ch09::solution
