// Exercise 3 — SGEMM with register tiles: the fast one.
//
// Start: a block of 256 threads computes a (BM = 128) x (BN = 128) tile of C; each thread
// owns a TM x TN = 8 x 8 block of it, held in 64 float registers. Per tile of K
// (BK = 8), the block stages A's (BM, BK) tile and B's (BK, BN) tile in shared memory;
// then, for each of the BK values of k, a thread reads TM values of A and TN values of B
// into registers and does TM * TN multiply-adds with them: 64 FMAs for 16 shared-memory
// reads, where exercise 2 did one FMA for two.
//
// Then go further, measuring each step with ch04_bench (docs/ch04-tiled-gemm.md has a hint
// ladder and the numbers to expect): float4 loads, A stored transposed in shared memory,
// a warp-level layout of the thread tiles, double buffering. The goal: 90% of cuBLAS.
//
// Edges as in exercise 2: zeros in the tiles past the matrices, guarded stores; a float4
// global load only where the address is 16-byte aligned and all four elements exist.
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
//   * the same bits on a repeated run [nondeterministic]: one owner per element of C, a fixed
//     order over K, so a difference is a race. Splitting K over blocks that meet through a
//     float atomicAdd would change the bits too: if you split K, add the parts in order.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which A and B end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch04 -R ex3_register_tiling
// Bench: build/ch04/bin/ch04_bench --impl=student,reference
// Guide: docs/ch04-tiled-gemm.md, section "Exercise 3".
#include "ch04.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch04 {
namespace {

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    sgemm_registers_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                           float beta, float* C, int ldc) {
  static_assert(BM % TM == 0 && BN % TN == 0, "the thread tiles must cover the block tile");
  constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0,
                "each thread loads the same number of elements of each tile");
  // TODO: the tiles and the accumulators:
  //   __shared__ float a_tile[BM][BK];  // (BM rows of C, BK of K)
  //   __shared__ float b_tile[BK][BN];  // (BK of K, BN cols of C)
  //   float acc[TM][TN] = {};           // this thread's TM x TN block of C, in registers
  // TODO: which TM x TN block of the block's tile is this thread's?
  // TODO: for each tile of K: every thread loads (BM * BK) / kThreads elements of A and
  //       (BK * BN) / kThreads of B (guarded, 0 outside), __syncthreads(); for each k < BK:
  //       TM values of A and TN values of B into registers, TM * TN FMAs; __syncthreads().
  // TODO: store the TM x TN block (guarded), alpha and beta as in exercise 1.
}

}  // namespace

void student::sgemm_registers(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                              float beta, float* C, int ldc, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch04_tiled_gemm/ex3_register_tiling.cu");  // delete this line when you start

  constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
  const dim3 block((kBM / kTM) * (kBN / kTN));
  const dim3 grid(1, 1);  // TODO: one block per (BM x BN) tile of C, rounding up
  sgemm_registers_kernel<kBM, kBN, kBK, kTM, kTN>
      <<<grid, block, 0, stream>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

}  // namespace ch04
