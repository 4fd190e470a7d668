// v2 — two adjacent elements per thread (exercise 2).
//
// What changes over v1: thread t owns elements 2t and 2t+1, so the grid needs half as many
// threads: ceil(n / 2) of them. Each element still needs its own bounds check: when n is
// odd, the last thread owns one real element and one past the end.
// Adjacent pairs leave every other float of a warp's access to the neighbouring thread,
// so each load instruction covers 2 x 128 bytes with gaps; the hardware still merges the
// warp's requests into full sectors, which is why this is not slower than v1.
//
// Run: build/ch01/bin/ch01_bench --impl=v2_two_per_thread,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch01::solution {
namespace {

constexpr int kThreads = 256;

__global__ void vector_add_x2_kernel(const float* a, const float* b, float* c, int n) {
  // 64-bit: for n near 2^31, twice the thread index passes the largest int.
  const int64_t first = 2 * (int64_t{blockIdx.x} * blockDim.x + threadIdx.x);
  if (first < n) c[first] = a[first] + b[first];
  if (first + 1 < n) c[first + 1] = a[first + 1] + b[first + 1];
}

}  // namespace

void v2_vector_add_x2(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  if (n == 0) return;
  const int threads_needed = n / 2 + n % 2;  // not (n + 1) / 2, which overflows for n = 2^31 - 1
  vector_add_x2_kernel<<<threads_needed / kThreads + (threads_needed % kThreads != 0), kThreads, 0, stream>>>(a, b, c,
                                                                                                              n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01::solution
