#include "cuda/timing.cuh"

#include <vector>

#include "cuda/device.cuh"
#include "cuda/launch.cuh"

namespace wb {

L2Flusher::L2Flusher() : scratch_(static_cast<size_t>(std::max(query_device().l2_bytes, 1 << 20)) * 2) {}

void L2Flusher::flush(cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0x5A, scratch_.bytes(), stream));
}

Stats time_launcher(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                    const std::string& what, const TimingOptions& opt) {
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
