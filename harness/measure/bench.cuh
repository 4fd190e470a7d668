// The benchmark runner every chapter uses: learner, solution ladder and reference side by
// side in one run, per shape. Each case (op, shape, variant) is one Google Benchmark
// benchmark, timed with manual time from CUDA events: one cold launch per iteration (new
// inputs and an L2 flush before it, outside the events), repetitions and their statistics by
// Google Benchmark. A case is checked for correctness before its first iteration (a wrong
// kernel is never timed) and disqualified by the fairness checks of measure/fair.cuh. The
// reporters (report/bench_report.h) print the roofline table and write the results file.
//
// Google Benchmark's flags work (--benchmark_filter, --benchmark_repetitions,
// --benchmark_min_time, --benchmark_format, --benchmark_out, ...); the workbook's own options
// say what its names cannot (docs/harness.md, "The benchmark").
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "declare/spec.h"
#include "measure/fair.cuh"
#include "measure/roofline.h"
#include "runtime/cli.h"

namespace wb::report {
struct Log;
}

namespace wb::bench {

using wb::Role;  // a benchmark row's author (declare/spec.h); never Role::Broken here

struct Case {
  std::string op;           // "vector_add/f32"
  std::string shape;        // "n=67108864"
  std::string shape_label;  // "n67108864"
  std::string dtype;        // "f32"
  std::string skip_reason;  // not run on this GPU, and why
  std::string impl;         // "cublas_geam", "v2_two_per_thread", "student"
  Role role = Role::Student;
  double bytes = 0;  // minimum traffic: each input read once, each output written once
  double flops = 0;
  Peak peak = Peak::FP32;
  std::function<Outcome()> verify;       // runs and checks once, before timing
  std::function<Timed()> prepare_timed;  // inputs that change between timed launches
};

class Suite {
 public:
  Suite(std::string chapter, std::string title);
  ~Suite();

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
  struct Active;  // the case being timed: its stream and sampler

  bool selected(const Case& c) const;
  std::string what(size_t index) const;
  void run_case(size_t index, void* state);  // the body of case `index`'s benchmark
  bool start_case(size_t index);             // checks it, then prepares it; false: not timed
  void activate(size_t index);               // prepares it for timing (again, after another case)
  void finish_case(size_t index);            // after its last repetition: the last output, hot L2
  void fail_case(size_t index, const std::exception_ptr& error);
  int list_and_write(const std::string& listing, const std::string& path);
  std::string usage() const;

  std::string chapter_, title_;
  ArgParser args_;
  bool full_ = false, remeasure_ = false;
  int64_t samples_ = 0;  // --samples; 0: by --benchmark_min_time
  std::string impl_filter_, shape_filter_, dtype_filter_, op_filter_, json_path_, markdown_path_;
  std::vector<Case> cases_;
  std::unique_ptr<report::Log> log_;
  std::vector<double> check_s_, started_;  // per case: seconds checking it; when it started
  std::unique_ptr<Active> active_;
  ClockWatch clocks_;
};

}  // namespace wb::bench
