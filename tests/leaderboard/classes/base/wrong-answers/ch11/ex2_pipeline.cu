// Exercise 2, written with a wrong sign: y = a x - b (the checks must call it wrong).
#include <algorithm>

#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

constexpr int kStreams = 3;

__global__ void axpb_kernel(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = a * x[i] - b;
  }
}

struct Streams {
  cudaStream_t s[kStreams];
  cudaEvent_t fork, done[kStreams];
};

const Streams& streams() {
  static const Streams made = [] {
    Streams x{};
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;  // created during the harness's capture
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    CUDA_CHECK(cudaEventCreateWithFlags(&x.fork, cudaEventDisableTiming));
    for (int i = 0; i < kStreams; ++i) {
      CUDA_CHECK(cudaStreamCreateWithFlags(&x.s[i], cudaStreamNonBlocking));
      CUDA_CHECK(cudaEventCreateWithFlags(&x.done[i], cudaEventDisableTiming));
    }
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    return x;
  }();
  return made;
}

}  // namespace

void student::pipeline(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                       cudaStream_t stream) {
  const Streams& st = streams();
  CUDA_CHECK(cudaEventRecord(st.fork, stream));
  for (int i = 0; i < kStreams; ++i) CUDA_CHECK(cudaStreamWaitEvent(st.s[i], st.fork, 0));
  const int64_t chunk = std::max<int64_t>(1, (n + 15) / 16);
  int c = 0;
  for (int64_t at = 0; at < n; at += chunk, ++c) {
    const int64_t len = std::min(chunk, n - at);
    const size_t bytes = sizeof(float) * static_cast<size_t>(len);
    cudaStream_t s = st.s[c % kStreams];
    CUDA_CHECK(cudaMemcpyAsync(dev_x + at, host_x + at, bytes, cudaMemcpyHostToDevice, s));
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((len + 255) / 256, 4096));
    axpb_kernel<<<blocks, 256, 0, s>>>(dev_x + at, dev_y + at, len, a, b);
    WB_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpyAsync(host_y + at, dev_y + at, bytes, cudaMemcpyDeviceToHost, s));
  }
  for (int i = 0; i < kStreams; ++i) {
    CUDA_CHECK(cudaEventRecord(st.done[i], st.s[i]));
    CUDA_CHECK(cudaStreamWaitEvent(stream, st.done[i], 0));
  }
}

}  // namespace ch11
