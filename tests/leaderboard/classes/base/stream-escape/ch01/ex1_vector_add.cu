// Hostile submission "stream-escape", exercise 1: the first seven eighths of the vector on the
// stream it is given, the last eighth on the legacy default stream, and it returns without
// waiting: a timer on the given stream misses part of the work. Expected: left work running
// after returning (outcome outside_stream), never ranked.
#include <cstdint>

#include "ch01.cuh"
#include "runtime/errors.cuh"

namespace ch01 {
namespace {

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int64_t begin, int n) {
  // 64-bit: for n near 2^31, begin plus the thread index passes the largest int.
  const int64_t i = begin + int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int split = n - n / 8;
  if (split > 0) {
    const int64_t blocks = (int64_t{split} + threads - 1) / threads;
    vector_add_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a, b, c, 0, split);
    WB_CHECK_LAUNCH();
  }
  if (n - split > 0) {
    const int64_t blocks = (int64_t{n} - split + threads - 1) / threads;
    vector_add_kernel<<<static_cast<unsigned>(blocks), threads, 0, cudaStreamLegacy>>>(a, b, c, split, n);
    WB_CHECK_LAUNCH();
  }
}

}  // namespace ch01
