// Exercise 2 — vector add, two adjacent elements per thread.
//
// Thread t handles elements 2t and 2t+1. Half as many threads as exercise 1: what
// happens to the grid size, and to the last thread when n is odd?
//
// What the tests check, and the outcome code a failure gets:
//   * c[i] within a few FP32 roundings of a[i] + b[i] in float64 [wrong]; NaN never passes [nan].
//   * every c[i] written, the last one too when n is odd [unwritten]; nothing past c[n - 1]
//     [oob_write].
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it a and b end where
//     unmapped memory begins, so even loading a[n] faults [oob_read].
//   * n = 1 ... 2^24 + 3 and random sizes first; then the large case, n = 2^31 - 1, where 2t
//     passes 2^31: compute it in 64 bits (26 GB of arrays: skipped on a smaller GPU).
//
// Test:  ctest --preset ch01 -R ex2_vector_add_x2
// Guide: docs/ch01-indexing.md, section "Exercise 2".
#include "ch01.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch01 {
namespace {

__global__ void vector_add_x2_kernel(const float* a, const float* b, float* c, int n) {
  // TODO: the first of this thread's two elements, then both of them, each only if < n.
}

}  // namespace

void student::vector_add_x2(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch01_indexing/ex2_vector_add_x2.cu");  // delete this line when you start

  const int threads = 256;
  const int blocks = 1;  // TODO: each thread covers two elements
  vector_add_x2_kernel<<<blocks, threads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
