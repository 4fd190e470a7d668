// Exercise 1 — vector add, one element per thread.
//
// Goal: c[i] = a[i] + b[i] for every 0 <= i < n, for ANY n (1, 3, 1025, 2^24 + 3 ...).
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
