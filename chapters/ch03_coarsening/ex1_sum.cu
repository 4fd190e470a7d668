// Exercise 1 — the sum of a large FP32 array.
//
// Goal: *out = x[0] + ... + x[n-1] for ANY n (0, 1, 3, 1025, 2^24 + 3 ...), as close to the
// memory bandwidth as you can get. Walk the ladder of docs/ch03-coarsening.md in this file:
//   1. one element per thread, a tree in shared memory per block, one partial per block,
//      then the same kernel again on the partials until one value is left;
//   2. sequential addressing (no idle lanes inside a warp);
//   3. the last five steps with __shfl_down_sync instead of shared memory;
//   4. thread coarsening: a grid sized to the GPU, many float4 loads per thread;
//   5. one kernel: the last block to finish adds the partials (a counter in the workspace).
//
// What the tests check, and the outcome code a failure gets:
//   * *out within a tolerance of the float64 sum that grows with n [wrong]: rtol = 2u +
//     4u*sqrt(n), atol = rtol*sqrt(n), u = 2^-24 (at n = 2^24 + 3: about 1e-3 of |sum|, plus
//     4). Written for n = 0 too, as 0 [unwritten]; NaN never passes [nan].
//   * the same bits on every run are NOT required, on purpose: adding each block's partial
//     into *out with atomicAdd (zeroed first, on the stream) is the classic grid reduction
//     and is accepted. Blocks finish in a new order each run, so the last bits change, well
//     inside the tolerance. Where identical bits matter (a training run that must repeat),
//     step 5's last-block finish adds the partials in a fixed order. A race is still caught:
//     as a wrong sum, or by the race pass, compute-sanitizer's racecheck [race].
//   * all work on `stream`, zeroing included: no default-stream launch, synchronize,
//     cudaMalloc, or copy or memset without Async [outside_stream].
//   * a second call, same workspace, new inputs [cached]: a ticket counter must be back at 0,
//     a running total zeroed again. In it x ends where unmapped memory begins, so even
//     loading x[n] faults [oob_read].
//   * n = 0, 1, 3, primes, one off 256 and 1024, 2^20 + 1, 2^24, 2^24 + 3, and random
//     sizes; then the large case, n = 2^31 - 1 (an int grid-stride index overflows).
//
// Test:  cmake --preset ch03 && ctest --preset ch03 -R ex1_sum
// Bench: build/ch03/bin/ch03_bench --impl=student,v5_one_pass,reference
// Guide: docs/ch03-coarsening.md, section "Exercise 1".
#include "ch03.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch03 {
namespace {

constexpr int kThreads = 256;

// One partial sum per block: partials[blockIdx.x] = the sum of this block's elements.
__global__ void block_sum_kernel(const float* x, int n, float* partials) {
  // TODO: a __shared__ array of kThreads floats, one value per thread of the block.
  // TODO: load this thread's element into it (0 when past n: the identity), then a barrier.
  // TODO: halve the number of active threads each step; a barrier after every step.
  // TODO: thread 0 writes the block's total.
}

}  // namespace

// Scratch for sum_f32, max_f32 and sum_bf16 of n elements: return the most any of your
// three launchers needs. The default fits one float per block for up to 4096 blocks
// plus a 256-byte header (room for a counter); change it to what your design needs.
size_t student::workspace_bytes(int n) {
  (void)n;
  return 256 + 4096 * sizeof(float);
}

void student::sum_f32(const float* x, int n, float* out, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch03_coarsening/ex1_sum.cu");  // delete this line when you start

  float* partials = static_cast<float*>(workspace);
  (void)workspace_bytes;  // TODO: check that your partials fit
  const int blocks = 1;   // TODO: enough blocks to cover n (round up), and at least one
  block_sum_kernel<<<blocks, kThreads, 0, stream>>>(x, n, partials);
  WB_CHECK_LAUNCH();
  // TODO: reduce the partials to one value in *out (another launch, or see step 5).
  (void)out;
}

}  // namespace ch03
