// Exercise 1 — SGEMM with one thread per element of C.
//
// Thread (row, col) computes the dot product of row `row` of A with column `col` of B,
// then writes C[row][col] = alpha * dot + beta * C[row][col] (without reading C when
// beta == 0). Make threadIdx.x follow the column: the 32 threads of a warp then read 32
// neighbouring elements of a row of B (one coalesced access) and the same element of A
// (a broadcast), and write 32 neighbours of C.
// The tests use primes, 1 x N, N x 1, K = 1 and leading dimensions larger than the widths.
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
