// Exercise 3 — the sum of a BF16 array, accumulated in FP32.
//
// Half the bytes of exercise 1 for the same number of elements, so at the same bandwidth
// it takes half the time. Convert each element with __bfloat162float and add in FP32
// (adding in BF16 loses everything after the third significant digit). For vector loads,
// four BF16 values are 8 bytes: load them as one uint2 or two __nv_bfloat162.
//
// What the tests check, and the outcome code a failure gets:
//   * *out within exercise 1's tolerance (it grows with n) of the float64 sum of the BF16
//     values [wrong]: accumulate in FP32; written for n = 0 too [unwritten]; no NaN [nan].
//   * the same bits on every run are not required, as in exercise 1: an atomicAdd finish
//     is accepted. A race is still caught, as a wrong sum or by the race pass [race].
//   * all work on `stream` [outside_stream].
//   * a second call, same workspace, new inputs [cached]; in it x ends where unmapped memory
//     begins: a 4-element load that reaches past x[n - 1] faults [oob_read].
//   * n = 0 ... 2^24 + 3 (odd n: 1 to 3 elements left after the last whole uint2) and
//     random sizes; then the large case, n = 2^31 - 1.
//
// Test:  ctest --preset ch03 -R ex3_sum_bf16
// Guide: docs/ch03-coarsening.md, section "Exercise 3".
#include "ch03.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch03 {
namespace {

constexpr int kThreads = 256;

__global__ void block_sum_bf16_kernel(const __nv_bfloat16* x, int n, float* partials) {
  // TODO: as in exercise 1, converting each element to float as it is loaded.
}

}  // namespace

void student::sum_bf16(const __nv_bfloat16* x, int n, float* out, void* workspace, size_t workspace_bytes,
                       cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch03_coarsening/ex3_sum_bf16.cu");  // delete this line when you start

  float* partials = static_cast<float*>(workspace);
  (void)workspace_bytes;
  const int blocks = 1;  // TODO
  block_sum_bf16_kernel<<<blocks, kThreads, 0, stream>>>(x, n, partials);
  WB_CHECK_LAUNCH();
  (void)out;  // TODO: the sum of the partials into *out
}

}  // namespace ch03
