// One case timed fairly, one cold launch at a time: the loop itself is Google Benchmark's
// (measure/bench.cpp calls sample() once per iteration and hands it the time); this file holds
// what makes each sample fair and the checks that disqualify a case.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "check/outcome.h"
#include "measure/left_work.h"
#include "measure/timing.cuh"
#include "runtime/buffers.cuh"

namespace wb::bench {

// A benchmark problem prepared for fair timing (see prepare_timed, measure/timed.cuh):
//   next_inputs(stream)  before every timed launch, outside the timed events: new input
//                        values (the same buffers) and a poisoned output;
//   launch(stream)       the timed call of the launcher;
//   check_last()         after the timed samples: compares the output, as the last timed
//                        launch left it, with a float64 reference for the inputs that launch
//                        was given. It must not launch anything.
//   unwritten(stream)    optional, after every timed launch, as soon as its stream is done:
//                        how many output elements still hold the poison next_inputs wrote
//                        (counted on the GPU, outside the timed events; 0 when all written).
// So a result reused from an earlier call, a launch that skips work on some calls, or work
// not finished when the timed stream is, shows up as unfair instead of fast.
struct Timed {
  std::function<void(cudaStream_t)> launch;
  std::function<void(cudaStream_t)> next_inputs;
  std::function<Outcome()> check_last;
  std::function<int64_t(cudaStream_t)> unwritten;
};

// The SM clock during the samples (NVML, loaded at run time) and thermal/power slowdowns.
class ClockWatch {
 public:
  ClockWatch();
  void reset();
  void sample();
  double median_mhz() const;
  bool throttled() const;

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*max_clock_)(void*, int, unsigned*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
  unsigned max_mhz_ = 0;
  std::vector<unsigned> mhz_;
  bool slowdown_ = false;
};

// Times a case prepared with prepare_timed on `stream`. Made once per case: a few warm-up
// launches, then the wait for an idle device is measured (the baseline of the check for work
// left running). Before each sample: new inputs, finished before the sample starts (so no
// work can hide behind them), then the L2 flush. After each sample: elements of the output
// still poisoned when the timed stream is done, and work on the legacy stream (or a blocking
// stream) that ends after it, disqualify the case (OutsideStream, StaleAfterTiming). After a
// run of samples, a device still busy after the timed stream disqualifies it when that
// repeats on re-measuring (end_run).
class FairSampler {
 public:
  FairSampler(Timed t, cudaStream_t stream, std::string what);

  // One cold sample: its milliseconds, or nullopt when the case was disqualified (outcome()
  // says why; no more samples are taken then).
  std::optional<double> sample();
  // After a run of samples (one Google Benchmark repetition): the wait for the whole device
  // after each sample, against the wait on an idle device, shows work left running. A wait
  // too long is measured again (a fresh idle baseline, a few more timed launches) before it
  // disqualifies the case: only a leftover that repeats does (measure/left_work.h).
  bool end_run();
  // After the last sample of the case: the output of the last timed launch is checked.
  bool finish();

  const Outcome& outcome() const { return outcome_; }
  const Timed& timed() const { return t_; }
  const std::string& what() const { return what_; }
  int64_t samples() const { return taken_; }

 private:
  struct Launched {
    double ms = 0;       // the timed launch, on the GPU's clock
    double wait_ms = 0;  // the wait for the whole device after its stream was done
  };
  bool disqualify(Code code, std::string why);
  // One timed launch with the checks that follow it; nullopt when they disqualified the case.
  std::optional<Launched> launch_once(const std::string& label);
  // The median wait for the whole device when nothing runs.
  double idle_wait_ms();
  // The leftover measured again after a sync: a new idle baseline, then a few timed launches
  // that are not samples; nullopt when one of them disqualified the case.
  std::optional<LeftOver> measure_left_again();

  Timed t_;
  cudaStream_t stream_;
  std::string what_;
  L2Flusher flusher_;
  Event start_, stop_, legacy_;
  double idle_ms_ = 0;
  std::vector<double> run_ms_, run_waits_ms_;  // this run's samples and device waits
  int64_t taken_ = 0;
  Outcome outcome_;
};

}  // namespace wb::bench
