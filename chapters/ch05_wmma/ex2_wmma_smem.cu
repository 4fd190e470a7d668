// Exercise 2 — WMMA with shared-memory tiles and several warps per block.
//
// Goal: the same GEMM as exercise 1, faster. A block computes a (BM x BN) tile of D with
// several warps; for each step of BK along K its threads copy the (BM x BK) tile of A and
// the (BK x BN) tile of B into shared memory once (zeros outside the matrices), wait at a
// barrier, and every warp loads its fragments from there. Then give each warp more than one
// fragment of D (a warp tile), so each fragment it loads feeds several mma_sync.
//
// What the tests check, and the outcome code a failure gets:
//   * D within the output type's rounding plus an FP32 sum over K (+1 with C) of a float64
//     reference [wrong], and its largest error at most 4x cuBLAS's on the same inputs, plus
//     a rounding step [wrong]: accumulate in FP32, round once; inputs of +-256 included.
//   * every element of D written, partial block tiles too [unwritten], nothing outside D
//     [oob_write], no NaN [nan].
//   * exercise 1's shapes, among them one exact 128 x 256 x 64 block tile and rows aligned
//     to 16 bytes that are no tile multiple (136 x 264 x 72 ...); BF16 skips below sm_80
//     [skipped]. Large, after the rest, on sampled rows: 2048^3, 4096^3, and
//     150,001 x 32 x 16,384, whose A passes 2^31 elements (offsets in 64 bits, size_t).
//   * the same bits on a repeated run [nondeterministic]: a fixed order over K per tile, so
//     a difference is a race (a missing barrier around the shared tiles).
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which A, B and C end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch05 -R ex2_wmma_smem
// Bench: build/ch05/bin/ch05_bench --impl=student,reference
// Guide: docs/ch05-wmma.md, section "Exercise 2" (and the hint ladder there).
#include <mma.h>

#include "ch05.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch05 {
namespace {

using namespace nvcuda;

constexpr int kBM = 64, kBN = 64, kBK = 32;  // block tile of D and step along K: change them freely
constexpr int kThreads = 128;                // 4 warps
static_assert(kBM % 16 == 0 && kBN % 16 == 0 && kBK % 16 == 0, "tiles are made of 16 x 16 fragments");

template <class In, class Out>
__global__ void wmma_smem_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
  if constexpr (has_tensor_cores<In>()) {
    // TODO: __shared__ tiles of A (kBM x kBK) and B (kBK x kBN). Every fragment must start on
    //       a 32-byte boundary and ldm must be a multiple of 8: pad rows by 8 elements (this
    //       also spreads a fragment load over the banks).
    // TODO: which part of the block tile is this warp's? Its accumulator fragments.
    // TODO: for k0 = 0, kBK, 2 kBK ... < K:
    //         copy both tiles (coalesced: consecutive threads, consecutive columns), zeros
    //         outside the matrices;  __syncthreads();
    //         for each 16-wide step inside kBK: load fragments, mma_sync;
    //         __syncthreads();  (before the next copy overwrites the tiles)
    // TODO: write the accumulators as in exercise 1 (through a per-warp float patch).
  }
}

template <class In, class Out>
void launch(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch05_wmma/ex2_wmma_smem.cu");  // delete this line when you start

  if (M <= 0 || N <= 0) return;
  const dim3 grid(1, 1);  // TODO: one block per (kBM x kBN) tile of D, rounding up
  wmma_smem_kernel<In, Out><<<grid, kThreads, 0, stream>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

}  // namespace

// student::wmma_smem_f16_f32, _f16_f16, _bf16_f32 and _bf16_bf16: each calls launch<In, Out> above.
CH05_STUDENT_16BIT(wmma_smem)

}  // namespace ch05
