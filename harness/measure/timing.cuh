// Timing a launcher with CUDA events: warm-up, an L2 flush before each cold sample, and
// the median and spread over many samples.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>

#include "runtime/buffers.cuh"
#include "measure/stats.h"

namespace wb {

// Evicts the L2 before a cold sample, on the stream and outside the events, by READING a
// buffer twice the L2's size (filled once, when the flusher is made). Reading leaves the L2
// full of clean lines, which the timed kernel drops for free. Writing the buffer instead (a
// memset) would leave it full of dirty lines, and the timed kernel would pay for writing them
// back to DRAM as it evicts them: up to the L2's size of extra DRAM traffic (50 MB on an H100,
// about 16 us at its copy bandwidth), a constant that swamps a short kernel's own time.
class L2Flusher {
 public:
  L2Flusher();
  void flush(cudaStream_t stream);

 private:
  DeviceBuffer<char> scratch_;
  int blocks_ = 0, threads_ = 0;  // the read kernel's grid (timing.cu)
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
Stats time_launcher(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream, const std::string& what,
                    const TimingOptions& opt = {});

}  // namespace wb
