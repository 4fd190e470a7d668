// Timing a launcher with CUDA events: warm-up, an L2 flush before each cold sample, and
// the median and spread over many samples.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>

#include "cuda/buffers.cuh"
#include "host/stats.h"

namespace wb {

// Evicts the L2 by writing a buffer larger than it (twice the L2 size). Done on the
// stream before a cold sample, outside the events.
class L2Flusher {
 public:
  L2Flusher();
  void flush(cudaStream_t stream);

 private:
  DeviceBuffer<char> scratch_;
};

struct TimingOptions {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 200;
  double min_total_ms = 200;  // keep sampling until this much kernel time was measured
  bool flush_l2 = true;       // false: hot-L2 samples, back to back
};

// Runs `launch` (already checked for correctness) and returns the sample statistics in
// milliseconds. `what` names it in a hang message.
Stats time_launcher(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                    const std::string& what, const TimingOptions& opt = {});

}  // namespace wb
