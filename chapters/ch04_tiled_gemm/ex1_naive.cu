// Exercise 1 — SGEMM with one thread per element of C.
//
// Thread (row, col) computes the dot product of row `row` of A with column `col` of B,
// then writes C[row][col] = alpha * dot + beta * C[row][col] (without reading C when
// beta == 0). Make threadIdx.x follow the column: the 32 threads of a warp then read 32
// neighbouring elements of a row of B (one coalesced access) and the same element of A
// (a broadcast), and write 32 neighbours of C.
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
//   * the same bits on a repeated run [nondeterministic]: one thread owns each element and
//     sums K in order, so yours is deterministic by construction.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which A and B end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch04 -R ex1_naive
// Guide: docs/ch04-tiled-gemm.md, section "Exercise 1".
#include "ch04.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch04 {
namespace {

__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                   float beta, float* C, int ldc) {
  // TODO: which (row, col) of C is this thread's? Leave if it is outside the M x N matrix.
  // TODO: accumulate sum over p of A[row * lda + p] * B[p * ldb + col] in a float.
  //       (row * lda passes 2^31 in the large case: do the product in size_t.)
  // TODO: write alpha * sum, plus beta * C[row * ldc + col] only when beta != 0.
}

}  // namespace

void student::sgemm_naive(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                          float beta, float* C, int ldc, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch04_tiled_gemm/ex1_naive.cu");  // delete this line when you start

  // TODO: return early when M or N is 0 (a grid of zero blocks is a launch error).
  const dim3 block(32, 8);
  const dim3 grid(1, 1);  // TODO: enough blocks to cover N columns (x) and M rows (y)
  sgemm_naive_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

}  // namespace ch04
