// Exercise 1 — vector add, one element per thread.
//
// Goal: c[i] = a[i] + b[i] for every 0 <= i < n, for ANY n (1, 3, 1025, 2^24 + 3 ...).
//
// What the tests check, and the outcome code a failure gets:
//   * c[i] within a few FP32 roundings of a[i] + b[i] in float64 [wrong]; NaN never passes [nan].
//   * every c[i] written (c starts as NaN poison) [unwritten]; nothing past c[n - 1] [oob_write].
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it a and b end where
//     unmapped memory begins, so even loading a[n] faults [oob_read].
//   * n = 1 ... 2^24 + 3 and random sizes first; then the large case, n = 2^31 - 1 (byte
//     offsets past 2^31: index in 64 bits). Its arrays take 26 GB: skipped on a smaller GPU.
//
// Test:  cmake --preset ch01 && ctest --preset ch01 -R ex1_vector_add
// Bench: build/ch01/bin/ch01_bench
// Guide: docs/ch01-indexing.md, section "Exercise 1".
#include "ch01.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch01 {
namespace {

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  // TODO: which element is this thread's? (blockIdx.x, blockDim.x, threadIdx.x)
  // TODO: the last block may have threads past n: they must not write.
}

}  // namespace

void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch01_indexing/ex1_vector_add.cu");  // delete this line when you start

  const int threads = 256;
  const int blocks = 1;  // TODO: enough blocks to cover n elements (round up!)
  vector_add_kernel<<<blocks, threads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
