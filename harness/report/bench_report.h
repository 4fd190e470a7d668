// What a chapter's benchmark reports: Google Benchmark's runs of each case (op, shape,
// variant) summarised as the workbook's row (median, spread, GB/s, TFLOPS, % of the spec and
// measured rooflines, speed relative to the reference), printed as the roofline table (the
// console format) and written as the results file (harness/report/results.schema.json:
// Google Benchmark's JSON with the workbook's context and rows beside it).
//
// Plain C++ on Google Benchmark's reporter interface, host-tested with made-up runs
// (harness/tests/bench_report_test.cpp). The CUDA side is measure/bench.cpp.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check/outcome.h"
#include "measure/ceilings.cuh"
#include "measure/roofline.h"
#include "report/results.h"
#include "runtime/device.cuh"

namespace wb::report {

using Json = results::Json;
using Run = benchmark::BenchmarkReporter::Run;

// One case as the runner registered it with Google Benchmark.
struct CaseInfo {
  std::string name;  // the registered name, what --benchmark_filter matches: "vector_add/f32/n16777216/v3_vectorized"
  std::string op, shape, dtype, impl, role;  // role: reference, solution, student
  double bytes = 0;                          // minimum traffic per call
  double flops = 0;
  Peak peak = Peak::FP32;
};

// What the runner learned about a case besides its times; no outcome: not run.
struct CaseResult {
  std::optional<Outcome> outcome;
  double hot_us = 0;  // median of back-to-back launches (L2 not flushed); 0: not measured
  double sm_clock_mhz = 0;
  bool throttled = false;
};

// The run as a whole: the workbook's part of the results file's context.
struct RunInfo {
  std::string program, chapter, title;
  uint64_t seed = 0;
  std::string seed_hint;  // "seed 42 (repeat with WORKBOOK_SEED=42)"
  DeviceInfo device;
  MeasuredCeilings measured;
  int repetitions = 1;     // --benchmark_repetitions
  double min_time_s = 0;   // --benchmark_min_time
  int64_t iterations = 0;  // --samples; 0: as many as min_time_s takes
  bool listed_only = false;
};

// Shared by the runner and the reporters: the cases, what the runner learned about each
// (filled while Google Benchmark runs), and the hook that lets the runner finish a case (the
// check of its last output, the hot-L2 time) when Google Benchmark has run all its
// repetitions, before any reporter keeps them.
struct Log {
  RunInfo run;
  std::vector<CaseInfo> cases;
  std::vector<CaseResult> results;  // one per case
  std::function<void(size_t)> on_case_done;

  std::optional<size_t> find(const std::string& registered_name) const;
  // The case a benchmark instance name belongs to ("<registered>/manual_time", ...).
  std::optional<size_t> find_instance(const std::string& instance_name) const;
};

// One case summarised.
struct Row {
  size_t index = 0;  // into Log::cases
  Outcome outcome;   // implausible when timed above the spec roofline
  bool timed = false;
  double median_us = 0;  // median over the repetitions of their mean launch time
  double cv_pct = -1;    // spread of the repetitions; -1 with one repetition
  int64_t samples = 0;   // timed launches, all repetitions
  int64_t repetitions = 0;
  double gbps = 0, tflops = 0, spec_pct = 0, meas_pct = 0;
  double vs_reference = -1;  // the first timed reference of the op and shape / this; -1: none
  std::string note;          // the table's note column
};

// The rows of the cases that `runs` holds (every case when the run only listed them), in
// the order the cases were registered.
std::vector<Row> summarize(const Log& log, const std::vector<Run>& runs);

std::string table(const Log& log, const std::vector<Row>& rows);     // header lines, the table, notes
std::string markdown(const Log& log, const std::vector<Row>& rows);  // for docs and class notes
// The results file: the workbook's context and rows, Google Benchmark's context and runs.
Json document(const Log& log, const std::vector<Row>& rows, const Json& context, const std::vector<Run>& runs);
Json context_json(const benchmark::BenchmarkReporter::Context& c);  // as Google Benchmark's JSON has it
Json run_json(const Run& r);                                        // likewise

// Google Benchmark's reporters for a benchmark program. A Reporter keeps what it is given
// and writes its format at the end; the display one also calls Log::on_case_done once per
// case. Csv delegates to Google Benchmark's own CSV reporter (without the workbook's rows).
class Reporter : public benchmark::BenchmarkReporter {
 public:
  enum class Format { Table, Json, Csv };
  Reporter(Log& log, Format format, bool display);
  ~Reporter() override;

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  const std::vector<Run>& runs() const { return runs_; }
  const Json& context() const { return context_; }
  std::vector<Row> rows() const { return summarize(log_, runs_); }

 private:
  Log& log_;
  Format format_;
  bool display_;
  std::vector<Run> runs_;
  Json context_ = Json::object();
  std::set<size_t> done_;
  std::unique_ptr<benchmark::BenchmarkReporter> csv_;
};

}  // namespace wb::report
