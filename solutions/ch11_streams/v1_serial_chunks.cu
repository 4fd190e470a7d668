// v1 — exercise 2 in chunks, every chunk on the given stream.
//
// What changed over the reference (one copy in, one kernel, one copy out): the work is cut
// into chunks, each copied in, computed and copied out in turn.
// Why it is not faster: one stream runs its work in order, so chunk i's copy-in still waits
// for chunk i-1's copy-out; the engines take turns and the time is the sum of the three
// steps, as before, plus a launch per chunk. Chunking is necessary, not sufficient: v2 gives
// the chunks to two streams.
//
// Run:  ctest --preset ch11-solution -R v1_serial_chunks
#include <algorithm>

#include "ladder.cuh"
#include "runtime/errors.cuh"

namespace ch11::solution {

void v1_pipeline(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                 cudaStream_t stream) {
  const int64_t chunk = std::max<int64_t>(1, (n + 7) / 8);  // eight chunks
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t len = std::min(chunk, n - at);
    const size_t bytes = sizeof(float) * static_cast<size_t>(len);
    CUDA_CHECK(cudaMemcpyAsync(dev_x + at, host_x + at, bytes, cudaMemcpyHostToDevice, stream));
    launch_axpb(dev_x + at, dev_y + at, len, a, b, stream);
    CUDA_CHECK(cudaMemcpyAsync(host_y + at, dev_y + at, bytes, cudaMemcpyDeviceToHost, stream));
  }
}

}  // namespace ch11::solution
