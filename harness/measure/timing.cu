#include "measure/timing.cuh"

#include <algorithm>
#include <vector>

#include "runtime/device.cuh"
#include "runtime/launch.cuh"

namespace wb {

namespace {

// Reads every 16 bytes of `buf` (n16 pieces) once, through L2. The XOR of what was read is
// stored only if it equals a value the filled buffer cannot give, so that the reads cannot be
// dropped and the L2 gains no dirty line.
__global__ void read_through_l2(const uint4* __restrict__ buf, size_t n16, unsigned int* __restrict__ never) {
  unsigned int x = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n16; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(buf + i);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0xFFFFFFFFu) *never = x;  // the buffer holds 0x5A bytes: every piece's XOR is 0
}

}  // namespace

// The read kernel's grid fills every thread slot of every SM (two blocks of half an SM's
// threads each), as a memset's kernel does: work that a launcher starts on a stream of its own
// cannot slip in beside the flush and finish, unseen, before the timed launch begins.
L2Flusher::L2Flusher() : scratch_(static_cast<size_t>(std::max(query_device().l2_bytes, 1 << 20)) * 2) {
  const DeviceInfo d = query_device();
  threads_ = std::clamp(d.max_threads_per_sm / 2 / 32 * 32, 32, 1024);
  blocks_ = 2 * std::max(d.sms, 1);
  CUDA_CHECK(cudaMemset(scratch_.data(), 0x5A, scratch_.bytes()));  // read on every flush: never uninitialised
  CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush(cudaStream_t stream) {
  // The last 16 bytes hold the flag the kernel never writes; the rest is read.
  const size_t n16 = scratch_.bytes() / 16 - 1;
  auto* never = reinterpret_cast<unsigned int*>(scratch_.data() + scratch_.bytes() - 16);
  read_through_l2<<<blocks_, threads_, 0, stream>>>(reinterpret_cast<const uint4*>(scratch_.data()), n16, never);
  CUDA_CHECK(cudaGetLastError());
}

Stats time_launcher(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream, const std::string& what,
                    const TimingOptions& opt) {
  L2Flusher flusher;
  Event start, stop;
  for (int i = 0; i < opt.warmup; ++i) launch(stream);
  sync_with_deadline(stream, what);
  std::vector<double> samples;
  double total = 0;
  while (static_cast<int>(samples.size()) < opt.max_samples &&
         (static_cast<int>(samples.size()) < opt.min_samples || total < opt.min_total_ms)) {
    if (opt.flush_l2) flusher.flush(stream);
    start.record(stream);
    launch(stream);
    stop.record(stream);
    sync_with_deadline(stream, what);
    const double ms = stop.ms_since(start);
    samples.push_back(ms);
    total += ms;
  }
  return summarize(samples);
}

}  // namespace wb
