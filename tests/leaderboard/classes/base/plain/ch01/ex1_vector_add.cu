// Fixture submission, exercise 1: a plain vector add, one element per thread.
#include <cstdint>

#include "ch01.cuh"
#include "runtime/errors.cuh"

namespace ch01 {
namespace {

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int64_t blocks = (int64_t{n} + threads - 1) / threads;  // n + threads - 1 overflows an int near 2^31
  vector_add_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
