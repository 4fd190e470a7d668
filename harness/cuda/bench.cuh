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

#include "cuda/launch.cuh"
#include "host/cli.h"
#include "host/roofline.h"
#include "host/stats.h"

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
// So a result reused from an earlier call, or work not finished when the timed stream is,
// shows up as a wrong answer instead of a fast time.
struct Timed {
  std::function<void(cudaStream_t)> launch;
  std::function<void(cudaStream_t)> next_inputs;
  std::function<Outcome()> check_last;
};

struct Case {
  std::string op;     // "vector_add"
  std::string shape;  // "n=67108864"
  std::string impl;   // "cublas_geam", "v2_two_per_thread", "student"
  Role role = Role::Student;
  double bytes = 0;   // minimum traffic: each input read once, each output written once
  double flops = 0;
  Peak peak = Peak::FP32;
  std::function<Outcome()> verify;                             // runs and checks once
  std::function<std::function<void(cudaStream_t)>()> prepare;  // allocates inputs, returns the launch
  // Optional, preferred over `prepare` when set: inputs that change between timed launches
  // and a check of the last timed output. The harness then also waits for the whole device
  // after each sample, and a case whose launcher left work running is reported as wrong.
  std::function<Timed()> prepare_timed;
};

struct Result {
  bool measured = false;
  Outcome outcome;
  Stats cold_ms, hot_ms;
};

class Suite {
 public:
  Suite(std::string chapter, std::string title);

  // Chapter-specific options, added before run().
  ArgParser& args() { return args_; }
  bool quick() const { return quick_; }
  void add(Case c);

  // Parses the command line, calls `build_cases` (which calls add()), runs everything
  // and reports. Returns the process exit code: 0 ok, 1 no GPU or a failure, 2 bad usage.
  int run(int argc, char** argv, const std::function<void()>& build_cases);

 private:
  bool selected(const Case& c) const;
  void run_case(size_t index, void* state);
  void report() const;

  std::string chapter_, title_;
  ArgParser args_;
  bool quick_ = false, remeasure_ = false;
  int64_t samples_ = 0;  // --samples; 0: default_samples()
  std::string impl_filter_, json_path_;
  std::vector<Case> cases_;
  std::vector<Result> results_;
  size_t prepared_index_ = SIZE_MAX;
  std::function<void(cudaStream_t)> prepared_launch_;
  Timed prepared_timed_;
};

}  // namespace wb::bench
