// Exercise 2 — SGEMM with shared-memory tiles.
//
// A block of TILE x TILE threads computes a TILE x TILE tile of C. It walks along K one
// tile at a time: each thread copies one element of A's (TILE rows, TILE of K) tile and
// one of B's (TILE of K, TILE cols) tile into shared memory, the block waits for every
// copy, then each thread takes TILE multiply-adds from shared memory, and the block waits
// again before the tiles are overwritten. Each element loaded from DRAM is now used TILE
// times instead of once.
//
// Edges: rows, columns or k past the end of the matrices load 0 into the tile (never read
// them), and only elements inside C are written. Every thread must reach every
// __syncthreads(), so do not return early: guard the loads and the store instead.
//
// What the tests check, and the outcome code a failure gets:
//   * C within a tolerance of the float64 alpha * A * B + beta * C that grows with K and with
//     max(|alpha|, |beta|) [wrong]. With beta == 0, C holds NaN on entry: reading it gives
//     NaN [nan]; so does reading A's or B's padding columns, which hold NaN too.
//   * every element of C written [unwritten]; its padding [N, ldc) comes back with the bits
//     it had [wrote_padding]; nothing outside C [oob_write].
//   * M, N or K = 0 (M or N = 0: launch nothing; K = 0: C = beta * C), 1 x N, N x 1, primes,
//     K = 1, K = 4097, each with pad 0, 4 and 3 (pad 3: rows not all 16-byte aligned), and
//     random shapes. Then the large cases, checked on sampled rows: 2048^3 with each pad, and
//     150,001 x 32 x 16,384 with pad 4, whose A passes 2^31 elements (row * lda passes 2^31
//     from row 131,041: offsets in 64 bits, size_t).
//   * the same bits on a repeated run [nondeterministic]: each element is still one thread's
//     sum in a fixed order, so only a race changes them: a missing __syncthreads() before
//     the tiles are read, or before they are overwritten, shows here.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which A and B end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch04 -R ex2_smem_tiling
// Guide: docs/ch04-tiled-gemm.md, section "Exercise 2".
#include "ch04.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch04 {
namespace {

template <int TILE>
__global__ void sgemm_smem_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                  float beta, float* C, int ldc) {
  static_assert(TILE * TILE <= 1024, "one thread per element of the tile: at most 1024 threads per block");
  // TODO: the tiles, in shared memory:
  //   __shared__ float a_tile[TILE][TILE];  // (TILE rows of C, TILE of K)
  //   __shared__ float b_tile[TILE][TILE];  // (TILE of K, TILE cols of C)
  // TODO: row and col of this thread's element of C.
  // TODO: for each tile of K: load (guarded, 0 outside), __syncthreads(), multiply-add
  //       TILE products, __syncthreads().
  // TODO: store (guarded), alpha and beta as in exercise 1.
}

}  // namespace

void student::sgemm_smem(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                         float* C, int ldc, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch04_tiled_gemm/ex2_smem_tiling.cu");  // delete this line when you start

  constexpr int kTile = 32;
  const dim3 block(kTile, kTile);
  const dim3 grid(1, 1);  // TODO
  sgemm_smem_kernel<kTile><<<grid, block, 0, stream>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

}  // namespace ch04
