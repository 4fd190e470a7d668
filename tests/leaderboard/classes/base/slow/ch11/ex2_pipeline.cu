// Exercise 2, written the slow way: right, but one copy in, one kernel, one copy out on the
// given stream, so nothing overlaps.
#include <algorithm>

#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

__global__ void axpb_kernel(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = a * x[i] + b;
  }
}

}  // namespace

void student::pipeline(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                       cudaStream_t stream) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  CUDA_CHECK(cudaMemcpyAsync(dev_x, host_x, bytes, cudaMemcpyHostToDevice, stream));
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096));
  axpb_kernel<<<blocks, 256, 0, stream>>>(dev_x, dev_y, n, a, b);
  WB_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpyAsync(host_y, dev_y, bytes, cudaMemcpyDeviceToHost, stream));
}

}  // namespace ch11
