// v3 — N streams, the chunk size chosen from the data size.
//
// What changed over v2: four streams instead of two, and the chunk size from n: about 32
// chunks, each between 1 MiB and 32 MiB.
// Why it is faster: a GPU has one engine for copies in, one for copies out (two on most data
// centre parts) and the SMs for kernels; with at least three streams each engine finds a
// chunk ready whenever it is free, so the time tends to that of the slowest step alone (the
// copies, for y = a x + b) plus one chunk of the other steps, to fill and drain the pipe.
// Many chunks make that fill and drain small; chunks under about 1 MiB copy below the
// bus's speed and cost a launch each, so the size is bounded below. A small n is one chunk.
//
// Run:  ctest --preset ch11-solution -R v3_n_streams
// Overlap:  build/ch11/bin/ch11_overlap   (target: >= 0.90 of the ideal at 1 GiB)
#include <algorithm>

#include "ladder.cuh"
#include "runtime/errors.cuh"

namespace ch11::solution {

constexpr int kStreams = 4;

int64_t v3_chunk(int64_t n) {
  constexpr int64_t kMin = int64_t{1} << 18, kMax = int64_t{1} << 23;  // 1 MiB and 32 MiB of floats
  int64_t chunk = std::clamp<int64_t>((n + 31) / 32, kMin, kMax);
  chunk = (chunk + 1023) / 1024 * 1024;  // whole 4 KiB pages
  return std::max<int64_t>(1, std::min(chunk, n));
}

void v3_pipeline(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                 cudaStream_t stream) {
  const int64_t chunk = v3_chunk(n);
  const int64_t chunks = (n + chunk - 1) / chunk;
  const int used = static_cast<int>(std::min<int64_t>(kStreams, std::max<int64_t>(chunks, 1)));
  const StreamSet& set = stream_set(used);
  fork_from(stream, set, used);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t at = c * chunk, len = std::min(chunk, n - at);
    const size_t bytes = sizeof(float) * static_cast<size_t>(len);
    cudaStream_t s = set.streams[c % used];
    CUDA_CHECK(cudaMemcpyAsync(dev_x + at, host_x + at, bytes, cudaMemcpyHostToDevice, s));
    launch_axpb(dev_x + at, dev_y + at, len, a, b, s);
    CUDA_CHECK(cudaMemcpyAsync(host_y + at, dev_y + at, bytes, cudaMemcpyDeviceToHost, s));
  }
  join_into(stream, set, used);
}

}  // namespace ch11::solution
