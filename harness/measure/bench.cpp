#include "measure/bench.cuh"

#include <benchmark/benchmark.h>
#include <cuda_profiler_api.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "declare/rng.h"
#include "measure/bench_flags.h"
#include "measure/ceilings.cuh"
#include "measure/timing.cuh"
#include "report/bench_report.h"
#include "report/gbench_compat.h"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace wb::bench {

namespace {

// The workbook's defaults for Google Benchmark's flags, used when the command line does not
// give them: 5 repetitions of at least 10 ms of GPU time each (a few to a few thousand
// launches, as long as the kernel takes), times in microseconds.
constexpr int kRepetitions = 5;
constexpr double kMinTimeS = 0.01;

// WORKBOOK_PROFILE_RANGE=1 (set by scripts/profile.sh, which runs Nsight Compute with
// --profile-from-start off): each case runs one extra launch inside a profiler range, once,
// so that ncu profiles exactly that launch and none of the harness's own kernels.
bool profile_range_requested() {
  const char* v = std::getenv("WORKBOOK_PROFILE_RANGE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

double seconds_since(double start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() - start;
}
double now_s() { return seconds_since(0); }

bool listed(const std::string& filter, const std::vector<std::string>& keys) {
  if (filter.empty()) return true;
  size_t start = 0;
  while (start <= filter.size()) {
    const size_t end = filter.find(',', start);
    const std::string item = filter.substr(start, end == std::string::npos ? std::string::npos : end - start);
    for (const auto& k : keys) {
      if (item == k) return true;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

std::string error_text(const Outcome& o) { return std::string(code_name(o.code)) + ": " + o.message; }

// A results file named on the command line must be writable before anything is measured:
// its folder is made, and it is opened without truncating it.
void check_writable(const std::string& what, const std::string& path) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (!std::ofstream(path, std::ios::app)) {
    throw UsageError(what + "=" + path + ": cannot write there (does its folder exist, is it writable?)");
  }
}

}  // namespace

struct Suite::Active {
  size_t index = 0;
  Stream stream;
  std::unique_ptr<FairSampler> sampler;
};

Suite::Suite(std::string chapter, std::string title)
    : chapter_(std::move(chapter)),
      title_(std::move(title)),
      args_(chapter_ + "_bench", title_ + ": every variant checked, then timed (Google Benchmark, CUDA events)"),
      log_(std::make_unique<report::Log>()) {
  args_.add_flag("full",
                 "the whole sweep of shapes and every ladder step (default: the headline shapes and the "
                 "ladder's steps that are not marked slow)",
                 &full_);
  args_.add_string("impl",
                   "only these, comma-separated: student, solution, reference (the roles, which the "
                   "names do not hold), or a version name; a slow step named here runs without --full",
                   &impl_filter_);
  args_.add_string("shape",
                   "only shapes whose label or text contains this (e.g. --shape=n67108864); a whole label or "
                   "text selects that shape alone (n=1024, not n=10240)",
                   &shape_filter_);
  args_.add_string("dtype", "only this dtype form of each op (f32, bf16, ...)", &dtype_filter_);
  args_.add_string("op", "only this op (e.g. --op=transpose)", &op_filter_);
  args_.add_string(
      "json",
      "the results file (the same as --benchmark_out=FILE; default results/" + chapter_ + "-<date>-<time>.json)",
      &json_path_);
  args_.add_string("markdown", "also write the table as Markdown to this file (for docs and class notes)",
                   &markdown_path_);
  args_.add_int("samples", "timed launches per repetition, instead of --benchmark_min_time's GPU time", &samples_, 1,
                100000);
  args_.add_flag("remeasure", "measure this GPU's ceilings again instead of using the cache", &remeasure_);
}

Suite::~Suite() = default;

void Suite::add(Case c) {
  if (selected(c)) cases_.push_back(std::move(c));
}

bool Suite::asked_for(const std::string& impl) const { return !impl_filter_.empty() && listed(impl_filter_, {impl}); }

bool Suite::selected(const Case& c) const {
  if (!listed(impl_filter_, {role_name(c.role), c.impl})) return false;
  if (!dtype_filter_.empty() && c.dtype != dtype_filter_) return false;
  if (!op_filter_.empty() && c.op != op_filter_ && c.op.rfind(op_filter_ + "/", 0) != 0) return false;
  if (!shape_filter_.empty() && c.shape.find(shape_filter_) == std::string::npos &&
      c.shape_label.find(shape_filter_) == std::string::npos) {
    return false;
  }
  return true;
}

std::string Suite::what(size_t index) const {
  const Case& c = cases_[index];
  return c.op + " " + c.shape + " [" + c.impl + "]";
}

void Suite::fail_case(size_t index, const std::exception_ptr& error) {
  Outcome o;
  try {
    std::rethrow_exception(error);
  } catch (const CudaError& e) {
    o = Outcome::fail(e.sticky ? Code::Fault : Code::LaunchError, what(index) + ": " + e.what());
  } catch (const NotImplemented& e) {
    o = Outcome::fail(Code::NotImplemented, what(index) + ": " + e.what());
  } catch (const std::exception& e) {
    o = Outcome::fail(Code::LaunchError, what(index) + ": " + e.what());
  }
  log_->results[index].outcome = o;
  if (active_ && active_->index == index) active_.reset();
}

bool Suite::start_case(size_t index) {
  report::CaseResult& res = log_->results[index];
  if (res.outcome) return res.outcome->passed();
  const Case& c = cases_[index];
  started_[index] = now_s();
  clocks_.reset();
  if (!c.skip_reason.empty()) {
    res.outcome = Outcome::fail(Code::Skipped, c.skip_reason);
    return false;
  }
  try {
    res.outcome = c.verify();  // a kernel is checked before it is timed
    check_s_[index] = seconds_since(started_[index]);
    if (!res.outcome->passed()) return false;
    activate(index);
    return true;
  } catch (...) {
    fail_case(index, std::current_exception());
    return false;
  }
}

void Suite::activate(size_t index) {
  if (active_ && active_->index == index) return;
  active_.reset();  // the previous case's buffers go first
  auto a = std::make_unique<Active>();
  a->index = index;
  Timed timed = cases_[index].prepare_timed();
  static std::set<size_t> profiled;
  if (profile_range_requested() && profiled.insert(index).second) {
    for (int i = 0; i < 3; ++i) {
      timed.next_inputs(a->stream);
      timed.launch(a->stream);
    }
    sync_with_deadline(a->stream, what(index));
    CUDA_CHECK(cudaProfilerStart());
    timed.launch(a->stream);
    sync_with_deadline(a->stream, what(index));
    CUDA_CHECK(cudaProfilerStop());
  }
  a->sampler = std::make_unique<FairSampler>(std::move(timed), a->stream, what(index));
  active_ = std::move(a);
}

// The body of a case's benchmark, called by Google Benchmark for each repetition (and, in
// the first, for each trial length until the iterations fill --benchmark_min_time).
void Suite::run_case(size_t index, void* state_ptr) {
  auto& st = *static_cast<benchmark::State*>(state_ptr);
  if (!start_case(index)) {
    st.SkipWithError(error_text(*log_->results[index].outcome).c_str());
    return;
  }
  try {
    activate(index);  // again, when Google Benchmark interleaves the cases
    FairSampler& f = *active_->sampler;
    for (auto _ : st) {
      const auto ms = f.sample();
      if (!ms) {
        st.SkipWithError(error_text(f.outcome()).c_str());
        break;
      }
      st.SetIterationTime(*ms * 1e-3);
      clocks_.sample();
    }
    if (!f.outcome().passed() || !f.end_run()) {
      log_->results[index].outcome = f.outcome();
      if (!st.error_occurred()) st.SkipWithError(error_text(f.outcome()).c_str());
      return;
    }
  } catch (...) {
    fail_case(index, std::current_exception());
    st.SkipWithError(error_text(*log_->results[index].outcome).c_str());
    return;
  }
  const Case& c = cases_[index];
  st.SetBytesProcessed(static_cast<int64_t>(c.bytes) * st.iterations());
  if (c.flops > 0)
    st.counters["flops_per_second"] = benchmark::Counter(c.flops, benchmark::Counter::kIsIterationInvariantRate);
}

// After the last repetition of a case (Google Benchmark reports it): the output of its last
// timed launch is checked, and a hot-L2 median taken for the table's note.
void Suite::finish_case(size_t index) {
  report::CaseResult& res = log_->results[index];
  if (res.outcome && res.outcome->passed()) {
    try {
      if (!active_ || active_->index != index) {
        activate(index);
        if (!active_->sampler->sample()) res.outcome = active_->sampler->outcome();
      }
      FairSampler& f = *active_->sampler;
      if (res.outcome->passed() && !f.finish()) res.outcome = f.outcome();
      if (res.outcome->passed()) {
        TimingOptions hot;
        hot.flush_l2 = false;
        hot.warmup = 1;
        hot.min_samples = 10;
        hot.max_samples = 50;
        hot.min_total_ms = 20;
        res.hot_us = 1e3 * time_launcher(f.timed().launch, active_->stream, what(index), hot).median;
        res.sm_clock_mhz = clocks_.median_mhz();
        res.throttled = clocks_.throttled();
      }
    } catch (...) {
      fail_case(index, std::current_exception());
    }
  }
  active_.reset();
  // One line per case on stderr, so a slow case shows in a log while the run goes on.
  const std::string code = res.outcome ? std::string(code_name(res.outcome->code)) : "not run";
  std::fprintf(stderr, "  [%zu/%zu] %s: %s, check %.1f s, total %.1f s\n", index + 1, cases_.size(),
               what(index).c_str(), code.c_str(), check_s_[index],
               started_[index] > 0 ? seconds_since(started_[index]) : 0.0);
}

std::string Suite::usage() const { return args_.usage() + "\n" + benchmark_flags_help(); }

// --benchmark_list_tests: Google Benchmark printed the selected names into `listing`; they are
// printed, and written (not run) to the results file when one is named.
int Suite::list_and_write(const std::string& listing, const std::string& path) {
  std::printf("%s", listing.c_str());
  std::vector<report::CaseInfo> shown;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    if (const auto i = log_->find_instance(line)) shown.push_back(log_->cases[*i]);
  }
  if (path.empty()) return 0;
  log_->cases = std::move(shown);
  log_->results.assign(log_->cases.size(), report::CaseResult{});
  const auto rows = report::summarize(*log_, {});
  const std::string problem = results::write(path, report::document(*log_, rows, report::Json::object(), {}));
  if (!problem.empty()) {
    std::fprintf(stderr, "%s_bench: %s\n", chapter_.c_str(), problem.c_str());
    return 1;
  }
  return 0;
}

int Suite::run(int argc, char** argv, const std::function<void()>& build_cases) {
  mark_main_started();
  const std::string prog = chapter_ + "_bench";
  std::vector<std::string> pass;
  BenchmarkFlags flags;
  std::string out_path;  // the results file named on the command line, if any
  try {
    if (!args_.parse(argc, argv, &pass, {"--benchmark_", "--v="})) {
      std::printf("\n%s", benchmark_flags_help().c_str());
      return 0;
    }
    flags = check_benchmark_flags(std::vector<std::string>(pass.begin() + 1, pass.end()));
    if (!json_path_.empty() && !flags.out.empty()) {
      throw UsageError("--json and --benchmark_out both name a results file: give one of them");
    }
    if (samples_ > 0 && flags.min_time) {
      throw UsageError(
          "--samples fixes the launches per repetition, so --benchmark_min_time would be ignored: give "
          "one of them");
    }
    if (!json_path_.empty()) check_writable("--json", json_path_);
    if (!flags.out.empty()) check_writable("--benchmark_out", flags.out);
    if (!markdown_path_.empty()) check_writable("--markdown", markdown_path_);
    out_path = !json_path_.empty() ? json_path_ : flags.out_format == "json" ? flags.out : "";
    run_seed();  // validates WORKBOOK_SEED
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n\n%s", prog.c_str(), e.what(), usage().c_str());
    return 2;
  }
  if (const auto reason = gpu_missing_reason()) {
    std::fprintf(stderr, "%s: cannot benchmark: %s. The command line is valid; timing needs an NVIDIA GPU.\n",
                 prog.c_str(), reason->c_str());
    return 1;
  }

  // Google Benchmark's command line: the workbook's defaults first, then what was given.
  std::vector<std::string> gb = {pass[0]};
  if (!flags.repetitions) gb.push_back("--benchmark_repetitions=" + std::to_string(kRepetitions));
  if (!flags.min_time && samples_ == 0)
    gb.push_back("--benchmark_min_time=" + std::to_string(kMinTimeS) + (report::kMinTimeTakesUnit ? "s" : ""));
  if (!flags.time_unit_given) gb.push_back("--benchmark_time_unit=us");
  for (std::string a : flags.args) {
    const std::string min_time = "--benchmark_min_time=";
    if (report::kMinTimeTakesUnit && a.rfind(min_time, 0) == 0 && std::isdigit(static_cast<unsigned char>(a.back())))
      a += "s";  // seconds (the workbook's flag), said so to Google Benchmark 1.8+
    gb.push_back(a);
  }
  if (!json_path_.empty()) {
    gb.push_back("--benchmark_out=" + json_path_);
    gb.push_back("--benchmark_out_format=json");
  }
  std::vector<char*> gargv;
  for (auto& s : gb) gargv.push_back(s.data());
  int gargc = static_cast<int>(gargv.size());
  benchmark::Initialize(&gargc, gargv.data());
  if (benchmark::ReportUnrecognizedArguments(gargc, gargv.data())) return 2;

  report::Log& log = *log_;
  std::vector<report::Row> rows;
  bool files_ok = true;
  try {
    log.run.program = prog;
    log.run.chapter = chapter_;
    log.run.title = title_;
    log.run.seed = run_seed();
    log.run.seed_hint = seed_hint();
    log.run.device = query_device();
    log.run.measured = measured_ceilings(log.run.device, remeasure_);
    log.run.repetitions = flags.repetitions.value_or(kRepetitions);
    log.run.min_time_s = samples_ > 0 ? 0 : flags.min_time.value_or(kMinTimeS);
    log.run.iterations = samples_;
    log.run.listed_only = flags.list;
    build_cases();
    // A shape given exactly (its whole label or text) selects that shape alone: "n=1024" is
    // then not also n=10240, which contains it.
    if (!shape_filter_.empty()) {
      const auto exact = [this](const Case& c) { return c.shape == shape_filter_ || c.shape_label == shape_filter_; };
      if (std::any_of(cases_.begin(), cases_.end(), exact)) {
        std::erase_if(cases_, [&](const Case& c) { return !exact(c); });
      }
    }
    if (cases_.empty()) {
      std::fprintf(stderr, "%s: nothing selected (--impl=%s --shape=%s --dtype=%s --op=%s); run with --help\n",
                   prog.c_str(), impl_filter_.c_str(), shape_filter_.c_str(), dtype_filter_.c_str(),
                   op_filter_.c_str());
      return 2;
    }
    for (const Case& c : cases_) {
      log.cases.push_back({c.op + "/" + c.shape_label + "/" + c.impl, c.op, c.shape, c.dtype, c.impl, role_name(c.role),
                           c.bytes, c.flops, c.peak});
    }
    log.results.assign(cases_.size(), report::CaseResult{});
    check_s_.assign(cases_.size(), 0);
    started_.assign(cases_.size(), 0);
    for (size_t i = 0; i < cases_.size(); ++i) {
      auto* b = benchmark::RegisterBenchmark(log.cases[i].name.c_str(),
                                             [this, i](benchmark::State& st) { run_case(i, &st); });
      b->UseManualTime();
      if (samples_ > 0) b->Iterations(samples_);
    }
    log.on_case_done = [this](size_t i) { finish_case(i); };

    const auto format = flags.format == "json"  ? report::Reporter::Format::Json
                        : flags.format == "csv" ? report::Reporter::Format::Csv
                                                : report::Reporter::Format::Table;
    report::Reporter display(log, format, true);
    std::unique_ptr<report::Reporter> file;
    if (!out_path.empty()) file = std::make_unique<report::Reporter>(log, report::Reporter::Format::Json, false);
    std::ostringstream listing;
    if (flags.list) display.SetOutputStream(&listing);
    if (!flags.list) std::fprintf(stderr, "%s: each case is checked, then timed...\n", prog.c_str());
    const size_t matched = benchmark::RunSpecifiedBenchmarks(&display, file.get());
    benchmark::Shutdown();
    if (matched == 0) {
      std::fprintf(stderr,
                   "%s: no case matches --benchmark_filter='%s' (names are op/dtype/shape/impl; "
                   "--benchmark_list_tests lists them)\n",
                   prog.c_str(), flags.filter.c_str());
      return 2;
    }
    if (flags.list) return list_and_write(listing.str(), out_path);
    std::fflush(stdout);  // the table first, then any messages on stderr
    rows = display.rows();
    if (!markdown_path_.empty()) {
      std::ofstream md(markdown_path_);
      md << report::markdown(log, rows);
      if (!md) {
        std::fprintf(stderr, "error: could not write the Markdown table '%s'\n", markdown_path_.c_str());
        files_ok = false;
      }
    }
    if (!flags.out.empty() || !json_path_.empty()) {
      // written by the file reporter
    } else {
      const std::string path = results::default_path(chapter_);
      const std::string problem = results::write(path, report::document(log, rows, display.context(), display.runs()));
      if (!problem.empty()) {
        std::fprintf(stderr, "error: %s, or give another with --json=FILE\n", problem.c_str());
        files_ok = false;
      } else {
        std::fprintf(format == report::Reporter::Format::Table ? stdout : stderr, "\nresults: %s\n", path.c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), e.what());
    return 1;
  }
  bool all_ok = true;
  for (const report::Row& r : rows) {
    const Code code = r.outcome.code;
    const bool expected_missing = log.cases[r.index].role == "student" && code == Code::NotImplemented;
    if (!r.timed && !expected_missing && !code_is_skip(code)) all_ok = false;
  }
  if (!all_ok) std::fprintf(stderr, "\nsome kernels were not timed: see the 'note' column and the messages below\n");
  for (const report::Row& r : rows) {
    if (!r.outcome.passed()) {
      std::fprintf(stderr, "  [%s] %s\n", std::string(code_name(r.outcome.code)).c_str(), r.outcome.message.c_str());
    }
  }
  return all_ok && files_ok ? 0 : 1;
}

}  // namespace wb::bench
