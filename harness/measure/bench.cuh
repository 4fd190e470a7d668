// The benchmark runner every chapter uses: learner, solution ladder and reference side by
// side in one run, per shape. Each case is checked for correctness first (a wrong kernel
// is never timed), then timed with CUDA events (Google Benchmark, manual time) with an L2
// flush before each cold sample; a hot-L2 median is taken too. At the end: a summary table
// (median, spread, GB/s, TFLOPS, % of the spec and measured rooflines, speed relative to
// the reference) and a JSON results file.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/launch.cuh"
#include "runtime/cli.h"
#include "measure/roofline.h"
#include "measure/stats.h"

namespace wb::bench {

enum class Role { Reference, Solution, Student };
const char* role_name(Role r);

// A benchmark problem prepared for fair timing (see Case::prepare_timed). The harness calls
//   next_inputs(stream)  before every timed launch, outside the timed events: new input
//                        values (the same buffers) and a poisoned output;
//   launch(stream)       the timed call of the launcher;
//   check_last()         once after the timed samples: compares the output, as the last
//                        timed launch left it, with a float64 reference for the inputs that
//                        launch was given. It must not launch anything.
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

struct Case {
  std::string op;     // "vector_add/f32"
  std::string shape;  // "n=67108864"
  std::string shape_label;  // "n67108864"
  std::string dtype;  // "f32"
  std::string skip_reason;  // not run on this GPU, and why
  std::string impl;   // "cublas_geam", "v2_two_per_thread", "student"
  Role role = Role::Student;
  double bytes = 0;   // minimum traffic: each input read once, each output written once
  double flops = 0;
  Peak peak = Peak::FP32;
  std::function<Outcome()> verify;        // runs and checks once, before timing
  std::function<Timed()> prepare_timed;   // inputs that change between timed launches
};

struct Result {
  bool measured = false;
  Outcome outcome;
  Stats cold_ms, hot_ms;
  double clock_mhz = 0;
  bool throttled = false;
};

// When to stop sampling a case (see enough() in bench.cu).
struct SampleRule {
  int64_t min = 10, max = 200;
  double noise = 0.005;      // relative standard error of the median
  double budget_ms = 1500;   // wall time per case
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

// Times a case prepared with prepare_timed, fairly. Before each sample: new inputs, finished
// before the sample starts (so no work can hide behind them), then the L2 flush. After each
// sample: work on the legacy stream (or a blocking stream) that ends after the timed stream
// disqualifies the case, and so does the wait for the whole device when, compared with the
// wait on an idle device, it shows work left running. After the samples: the output of the
// last timed launch is checked. Returns the samples (ms); sets *unfair and *code (OutsideStream,
// StaleAfterTiming) when the case is disqualified, and leaves them alone otherwise.
std::vector<double> time_fair(const Timed& t, cudaStream_t stream, const SampleRule& rule, const std::string& what,
                              std::string* unfair, Code* code, ClockWatch& clocks);

class Suite {
 public:
  Suite(std::string chapter, std::string title);

  // Chapter-specific options, added before run().
  ArgParser& args() { return args_; }
  bool full() const { return full_; }
  // Whether --impl names this implementation (then it runs even if it is a slow step).
  bool asked_for(const std::string& impl) const;
  void add(Case c);

  // Parses the command line, calls `build_cases` (which calls add()), runs everything
  // and reports. Returns the process exit code: 0 ok, 1 no GPU or a failure, 2 bad usage.
  int run(int argc, char** argv, const std::function<void()>& build_cases);

 private:
  bool selected(const Case& c) const;
  void run_case(size_t index, void* state);
  // run_case without its progress line; `what` names the case in messages
  void measure_case(size_t index, const std::string& what, double* check_s);
  bool report() const;  // false: a results file (--json, --markdown) could not be written

  std::string chapter_, title_;
  ArgParser args_;
  bool full_ = false, remeasure_ = false;
  int64_t samples_ = 0;  // --samples; 0: adaptive
  std::string impl_filter_, shape_filter_, dtype_filter_, op_filter_, json_path_, markdown_path_;
  std::vector<Case> cases_;
  std::vector<Result> results_;
  ClockWatch clocks_;
};

}  // namespace wb::bench
