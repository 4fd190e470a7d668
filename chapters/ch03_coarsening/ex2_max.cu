// Exercise 2 — the maximum of a large FP32 array.
//
// The same reduction as exercise 1 with another operation: fmaxf instead of +, and
// -INFINITY instead of 0 as the value a thread with no element contributes (that is also
// the answer for n = 0). The inputs are all negative, so starting from 0 gives 0, not the
// max. The max is checked exactly: there is no rounding in a max.
//
// What the tests check, and the outcome code a failure gets:
//   * *out equal to the max, exactly: no rounding happens in a max [wrong]; -infinity for
//     n = 0; never left unwritten [unwritten]. Every input is negative, and the max sits
//     first, last or at a random position.
//   * the same bits on a repeated run [nondeterministic]. Unlike the sums, the max keeps
//     this check: a correct max is exact in any order, atomics included, so it costs you
//     nothing, and a difference can only be a race.
//   * all work on `stream` [outside_stream].
//   * a second call, same workspace, new inputs [cached]; in it x ends where unmapped memory
//     begins, so even loading x[n] faults [oob_read].
//   * n = 0 ... 2^24 + 3 (as exercise 1) and random sizes; then the large
//     case, n = 2^31 - 1 with the maximum in the last element.
//
// Test:  ctest --preset ch03 -R ex2_max
// Guide: docs/ch03-coarsening.md, section "Exercise 2".
#include <cmath>

#include "ch03.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch03 {
namespace {

constexpr int kThreads = 256;

__global__ void block_max_kernel(const float* x, int n, float* partials) {
  // TODO: as in exercise 1, with fmaxf and -INFINITY.
}

}  // namespace

void student::max_f32(const float* x, int n, float* out, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch03_coarsening/ex2_max.cu");  // delete this line when you start

  float* partials = static_cast<float*>(workspace);
  (void)workspace_bytes;
  const int blocks = 1;  // TODO
  block_max_kernel<<<blocks, kThreads, 0, stream>>>(x, n, partials);
  WB_CHECK_LAUNCH();
  (void)out;  // TODO: the max of the partials into *out
}

}  // namespace ch03
