// Fixture submission "caching", exercise 1: remembers the pointers and size of its last call
// and returns at once when they repeat, assuming the answer is still in c. Right on every
// first call; after that, whatever c holds.
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
  static const float *last_a = nullptr, *last_b = nullptr, *last_c = nullptr;
  static int last_n = -1;
  if (a == last_a && b == last_b && c == last_c && n == last_n) return;
  last_a = a, last_b = b, last_c = c, last_n = n;
  const int threads = 256;
  const int64_t blocks = (int64_t{n} + threads - 1) / threads;  // n + threads - 1 overflows an int near 2^31
  vector_add_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
