// Fixture submission "slow", exercise 2.
#include <cstdint>

#include "ch01.cuh"
#include "runtime/errors.cuh"

namespace ch01 {
namespace {

// A fixed, tiny grid: 16 blocks of 256 threads walk the whole problem with a grid-stride
// loop. Right for every size, but 4096 threads cannot keep enough loads in flight.
constexpr int kBlocks = 16, kThreads = 256;

__global__ void vector_add_x2_kernel(const float* a, const float* b, float* c, int n) {
  // 64-bit: for n near 2^31, 2 * p and the stride step pass the largest int.
  for (int64_t p = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; 2 * p < n; p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = 2 * p;
    c[i] = a[i] + b[i];
    if (i + 1 < n) c[i + 1] = a[i + 1] + b[i + 1];
  }
}

}  // namespace

void student::vector_add_x2(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  vector_add_x2_kernel<<<kBlocks, kThreads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
