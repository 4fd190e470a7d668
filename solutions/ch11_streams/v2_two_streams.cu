// v2 — two streams, forked from the given stream and joined back with events.
//
// What changed over v1: the chunks alternate between two streams of the solution's own. An
// event recorded on the given stream (the fork) is waited for by both, so nothing starts
// before the work already there; an event recorded on each stream after its last chunk (the
// join) is waited for by the given stream, so whoever reads the result after the given stream
// reads it complete. Exercise 3 is the same shape: one GEMV on the given stream, one on a side
// stream, forked and joined.
// Why it is faster: while stream 0 copies chunk i in, stream 1 can run chunk i-1's kernel or
// copy it out: two engines busy instead of one. With two streams the three steps still
// collide (copy-in of i+2 waits behind i's copy-out on the same stream); v3 uses more.
// Each GEMV of a few rows fills part of the GPU: two of them at once fill more of it.
//
// Run:  ctest --preset ch11-solution -R v2_two_streams
#include <algorithm>
#include <mutex>

#include "ladder.cuh"
#include "runtime/errors.cuh"

namespace ch11::solution {
namespace {

// One block per row: each thread sums a strided part of the row, then the block adds them.
__global__ void gemv_kernel(const float* A, const float* x, float* y, int k) {
  __shared__ float warp_sums[32];
  const float* row = A + static_cast<size_t>(blockIdx.x) * k;
  float acc = 0.0f;
  for (int j = threadIdx.x; j < k; j += blockDim.x) acc += row[j] * x[j];
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) y[blockIdx.x] = acc;
  }
}

}  // namespace

void launch_gemv(const float* A, const float* x, float* y, int m, int k, cudaStream_t stream) {
  if (m <= 0) return;
  gemv_kernel<<<m, 256, 0, stream>>>(A, x, y, k);
  CUDA_CHECK(cudaGetLastError());
}

const StreamSet& stream_set(int count) {
  static std::mutex lock;
  static StreamSet set;
  std::lock_guard<std::mutex> hold(lock);
  if (static_cast<int>(set.streams.size()) >= count) return set;
  // The first call may come while the caller's stream is being captured: creating streams and
  // events is not stream work, so the capture is told to tolerate it (relaxed, then restored).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  if (!set.fork) CUDA_CHECK(cudaEventCreateWithFlags(&set.fork, cudaEventDisableTiming));
  while (static_cast<int>(set.streams.size()) < count) {
    cudaStream_t s = nullptr;
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    set.streams.push_back(s);
    set.done.push_back(e);
  }
  CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  return set;
}

void fork_from(cudaStream_t stream, const StreamSet& set, int count) {
  CUDA_CHECK(cudaEventRecord(set.fork, stream));
  for (int i = 0; i < count; ++i) CUDA_CHECK(cudaStreamWaitEvent(set.streams[i], set.fork, 0));
}

void join_into(cudaStream_t stream, const StreamSet& set, int count) {
  for (int i = 0; i < count; ++i) {
    CUDA_CHECK(cudaEventRecord(set.done[i], set.streams[i]));  // on the stream that did the work
    CUDA_CHECK(cudaStreamWaitEvent(stream, set.done[i], 0));
  }
}

void v2_pipeline(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                 cudaStream_t stream) {
  const StreamSet& set = stream_set(2);
  fork_from(stream, set, 2);
  const int64_t chunk = std::max<int64_t>(1, (n + 7) / 8);
  int c = 0;
  for (int64_t at = 0; at < n; at += chunk, ++c) {
    const int64_t len = std::min(chunk, n - at);
    const size_t bytes = sizeof(float) * static_cast<size_t>(len);
    cudaStream_t s = set.streams[c % 2];
    CUDA_CHECK(cudaMemcpyAsync(dev_x + at, host_x + at, bytes, cudaMemcpyHostToDevice, s));
    launch_axpb(dev_x + at, dev_y + at, len, a, b, s);
    CUDA_CHECK(cudaMemcpyAsync(host_y + at, dev_y + at, bytes, cudaMemcpyDeviceToHost, s));
  }
  join_into(stream, set, 2);
}

void v2_fork_join(const float* A1, const float* x1, float* y1, const float* A2, const float* x2, float* y2, int m,
                  int k, cudaStream_t stream) {
  const StreamSet& set = stream_set(1);
  fork_from(stream, set, 1);
  launch_gemv(A1, x1, y1, m, k, stream);
  launch_gemv(A2, x2, y2, m, k, set.streams[0]);
  join_into(stream, set, 1);
}

}  // namespace ch11::solution
