// v0 — exercise 1: pageable arrays in and out, through pinned staging.
//
// What it does: the program owns a pinned buffer and a device buffer of `count` floats. Each
// chunk is copied by the CPU into the pinned buffer, by the copy engine to the device
// (cudaMemcpyAsync: the engine reads pinned memory directly, at the full speed of the bus),
// computed in place, copied back, and, after one wait on the stream, copied by the CPU into
// the pageable result. No call here touches the legacy default stream.
// Why it matters: from pageable memory the driver does the same through its own small
// pinned buffer, and the call blocks the host; owning the staging is what lets the next
// steps overlap copies with anything.
//
// Run:  ctest --preset ch11-solution -R v0_pinned_staging
#include <algorithm>
#include <cstring>

#include "ladder.cuh"
#include "runtime/errors.cuh"

namespace ch11::solution {
namespace {

__global__ void axpb_kernel(const float* x, float* y, int64_t n, float a, float b) {
  // A grid-stride loop: any n with a grid capped at a few waves.
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = a * x[i] + b;
  }
}

}  // namespace

void launch_axpb(const float* x, float* y, int64_t n, float a, float b, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65536);
  axpb_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n, a, b);
  CUDA_CHECK(cudaGetLastError());
}

Staging v0_staging_create(size_t count) {
  Staging s;
  s.count = count;
  CUDA_CHECK(cudaMallocHost(&s.pinned, sizeof(float) * count));
  CUDA_CHECK(cudaMalloc(&s.device, sizeof(float) * count));
  return s;
}

void v0_staging_destroy(Staging& s) {
  if (s.pinned) CUDA_CHECK(cudaFreeHost(s.pinned));
  if (s.device) CUDA_CHECK(cudaFree(s.device));
  s.pinned = nullptr;
  s.device = nullptr;
}

void v0_staged_axpb(const float* host_x, float* host_y, int64_t n, float a, float b, const Staging& s,
                    cudaStream_t stream) {
  const int64_t chunk = static_cast<int64_t>(s.count);
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t len = std::min(chunk, n - at);
    const size_t bytes = sizeof(float) * static_cast<size_t>(len);
    std::memcpy(s.pinned, host_x + at, bytes);  // pageable -> pinned: the CPU's part
    CUDA_CHECK(cudaMemcpyAsync(s.device, s.pinned, bytes, cudaMemcpyHostToDevice, stream));
    launch_axpb(s.device, s.device, len, a, b, stream);
    CUDA_CHECK(cudaMemcpyAsync(s.pinned, s.device, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the copy back has landed only now
    std::memcpy(host_y + at, s.pinned, bytes);
  }
}

}  // namespace ch11::solution
