// The reference of chapter 11: the serial form of each op, on the given stream alone.
//
//   staged_axpb  the program, one chunk at a time, waiting after each copy
//   pipeline     one copy in, one kernel, one copy out: nothing overlaps
//   fork_join    the two GEMVs one after the other on the given stream
//   chain        one launch per step, every call
// The ladder's steps are measured against these (build/ch11/bin/ch11_overlap).
#include <algorithm>
#include <cstring>

#include "ch11.cuh"
#include "host_io.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"
#include "serial_kernels.cuh"

namespace ch11 {
namespace {

void axpb(const float* x, float* y, int64_t n, float a, float b, cudaStream_t stream) {
  if (n <= 0) return;
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 65536);
  axpb_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(x, y, n, a, b);
  CUDA_CHECK(cudaGetLastError());
}

Staging serial_staging_create(size_t count) {
  Staging s;
  s.count = count;
  CUDA_CHECK(cudaMallocHost(&s.pinned, sizeof(float) * count));
  CUDA_CHECK(cudaMalloc(&s.device, sizeof(float) * count));
  return s;
}

void serial_staging_destroy(Staging& s) {
  if (s.pinned) CUDA_CHECK(cudaFreeHost(s.pinned));
  if (s.device) CUDA_CHECK(cudaFree(s.device));
  s.pinned = nullptr;
  s.device = nullptr;
}

void serial_staged_axpb(const float* host_x, float* host_y, int64_t n, float a, float b, const Staging& s,
                        cudaStream_t stream) {
  const int64_t chunk = static_cast<int64_t>(s.count);
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t len = std::min(chunk, n - at);
    const size_t bytes = sizeof(float) * static_cast<size_t>(len);
    std::memcpy(s.pinned, host_x + at, bytes);
    CUDA_CHECK(cudaMemcpyAsync(s.device, s.pinned, bytes, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    axpb(s.device, s.device, len, a, b, stream);
    CUDA_CHECK(cudaMemcpyAsync(s.pinned, s.device, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memcpy(host_y + at, s.pinned, bytes);
  }
}

void serial_pipeline(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                     cudaStream_t stream) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  CUDA_CHECK(cudaMemcpyAsync(dev_x, host_x, bytes, cudaMemcpyHostToDevice, stream));
  axpb(dev_x, dev_y, n, a, b, stream);
  CUDA_CHECK(cudaMemcpyAsync(host_y, dev_y, bytes, cudaMemcpyDeviceToHost, stream));
}

void serial_fork_join(const float* A1, const float* x1, float* y1, const float* A2, const float* x2, float* y2, int m,
                      int k, cudaStream_t stream) {
  if (m <= 0) return;
  gemv_kernel<<<m, 256, 0, stream>>>(A1, x1, y1, k);
  CUDA_CHECK(cudaGetLastError());
  gemv_kernel<<<m, 256, 0, stream>>>(A2, x2, y2, k);
  CUDA_CHECK(cudaGetLastError());
}

void eager_chain(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t stream) {
  if (n <= 0) return;
  for (int s = 0; s < steps; ++s) {
    step_kernel<<<(n + 255) / 256, 256, 0, stream>>>(s == 0 ? x : y, y, w, s, n, c);
    CUDA_CHECK(cudaGetLastError());
  }
}

const StagedProgram kSerialProgram{&serial_staging_create, &serial_staging_destroy, &serial_staged_axpb};

}  // namespace

WB_VARIANTS(ch11_reference, wb::Role::Reference) {
  return {
      wb::variant("staged_axpb/f32", "serial", &kSerialProgram),
      pipeline_variant("serial", &serial_pipeline),
      wb::variant("fork_join/f32", "serial", &serial_fork_join),
      wb::variant("chain/f32", "eager", &eager_chain),
  };
}

}  // namespace ch11
