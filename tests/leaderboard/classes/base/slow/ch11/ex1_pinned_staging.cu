// Exercise 1, written: pageable arrays through pinned staging, one chunk at a time.
#include <algorithm>
#include <cstring>

#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

__global__ void axpb_kernel(float* v, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    v[i] = a * v[i] + b;
  }
}

}  // namespace

Staging student::staging_create(size_t count) {
  Staging s;
  s.count = count;
  CUDA_CHECK(cudaMallocHost(&s.pinned, sizeof(float) * count));
  CUDA_CHECK(cudaMalloc(&s.device, sizeof(float) * count));
  return s;
}

void student::staging_destroy(Staging& s) {
  CUDA_CHECK(cudaFreeHost(s.pinned));
  CUDA_CHECK(cudaFree(s.device));
  s.pinned = nullptr;
  s.device = nullptr;
}

void student::staged_axpb(const float* host_x, float* host_y, int64_t n, float a, float b, const Staging& s,
                          cudaStream_t stream) {
  for (int64_t at = 0; at < n; at += static_cast<int64_t>(s.count)) {
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(s.count), n - at);
    const size_t bytes = sizeof(float) * static_cast<size_t>(len);
    std::memcpy(s.pinned, host_x + at, bytes);
    CUDA_CHECK(cudaMemcpyAsync(s.device, s.pinned, bytes, cudaMemcpyHostToDevice, stream));
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((len + 255) / 256, 4096));
    axpb_kernel<<<blocks, 256, 0, stream>>>(s.device, len, a, b);
    WB_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpyAsync(s.pinned, s.device, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memcpy(host_y + at, s.pinned, bytes);
  }
}

}  // namespace ch11
