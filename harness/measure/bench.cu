#include "measure/bench.cuh"

#include <benchmark/benchmark.h>
#include <cuda_profiler_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "runtime/buffers.cuh"
#include "measure/ceilings.cuh"
#include "runtime/device.cuh"
#include "measure/timing.cuh"
#include "report/results.h"
#include "declare/rng.h"
#include "report/table.h"
#include "report/version.h"

namespace wb::bench {

const char* role_name(Role r) {
  switch (r) {
    case Role::Reference: return "reference";
    case Role::Solution: return "solution";
    case Role::Student: return "student";
  }
  return "?";
}

namespace {

struct RunContext {
  DeviceInfo device;
  MeasuredCeilings measured;
};
RunContext* g_context = nullptr;

// WORKBOOK_PROFILE_RANGE=1 (set by scripts/profile.sh, which runs Nsight Compute with
// --profile-from-start off): each case runs one extra launch inside a profiler range, once,
// so that ncu profiles exactly that launch and none of the harness's own kernels.
bool profile_range_requested() {
  const char* v = std::getenv("WORKBOOK_PROFILE_RANGE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}
std::set<size_t> g_profiled_cases;

std::string timestamp(const char* fmt) {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, std::localtime(&t));
  return buf;
}

// Reference median for the same op and shape, or 0.
double reference_ms(const std::vector<Case>& cases, const std::vector<Result>& results, const Case& c) {
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].role == Role::Reference && cases[i].op == c.op && cases[i].shape == c.shape &&
        results[i].measured) {
      return results[i].cold_ms.median;
    }
  }
  return 0;
}

// Waits for `stop` by polling without sleeping for a short while (so the moment it completes
// is seen at once), then as sync_with_deadline does.
void wait_for_event(const Event& stop, cudaStream_t stream, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(50)) {
    const cudaError_t st = cudaEventQuery(stop.get());
    if (st == cudaSuccess) return;
    if (st != cudaErrorNotReady) CUDA_CHECK(st);
  }
  sync_with_deadline(stream, what);
}

// Whether to stop sampling: at least `min` samples, and the median known to within
// `noise` (relative standard error of the median, from the median absolute deviation),
// or `max` samples, or `budget_ms` of wall time spent.
bool enough(const std::vector<double>& samples, int64_t min, int64_t max, double noise, double spent_ms, double budget_ms) {
  const int64_t n = static_cast<int64_t>(samples.size());
  if (n < min) return false;
  if (n >= max || spent_ms >= budget_ms) return true;
  std::vector<double> v = samples;
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  const double med = v[n / 2];
  for (auto& x : v) x = std::fabs(x - med);
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  const double mad = v[n / 2];
  const double se = 1.4826 * mad * 1.2533 / std::sqrt(static_cast<double>(n));
  return med > 0 && se / med < noise;
}

}  // namespace

// (bench.cuh says what it checks.)
std::vector<double> time_fair(const Timed& t, cudaStream_t stream, const SampleRule& rule, const std::string& what,
                              std::string* unfair, Code* code, ClockWatch& clocks) {
  L2Flusher flusher;
  Event start, stop, legacy;
  for (int i = 0; i < 3; ++i) {
    t.next_inputs(stream);
    t.launch(stream);
  }
  sync_with_deadline(stream, what);
  device_sync_with_deadline(what);
  std::vector<double> idle;
  for (int i = 0; i < 5; ++i) idle.push_back(device_sync_with_deadline(what));
  const double idle_ms = summarize(idle).median;

  std::vector<double> samples, waits;
  const auto began = std::chrono::steady_clock::now();
  while (true) {
    t.next_inputs(stream);
    sync_with_deadline(stream, what);
    flusher.flush(stream);
    start.record(stream);
    t.launch(stream);
    // The timed stream is non-blocking, so an event on the legacy stream completes when the
    // work the launcher put there (or on a blocking stream) is done, and at once when there is
    // none. Recorded BEFORE `stop`, it can only end after `stop` when such work outlives the
    // timed stream: host delays between the two records only make it earlier. The distance is
    // read on the GPU's own clock.
    legacy.record(cudaStreamLegacy);
    stop.record(stream);
    wait_for_event(stop, stream, what);
    // Every sample, not only the last: each timed launch must have written its whole output
    // by the time its stream is done. Counted on the timed stream, so work still running on
    // another stream is caught while it runs, however small.
    if (t.unwritten) {
      if (const int64_t gap = t.unwritten(stream); gap > 0) {
        device_sync_with_deadline(what);
        const int64_t later = t.unwritten(stream);
        const std::string sample = "timed launch " + std::to_string(samples.size() + 1);
        if (later < gap) {
          *code = Code::OutsideStream;
          *unfair = what + ": " + sample + " had left " + std::to_string(gap) + " output elements unwritten when its "
                    "stream finished; work on another stream wrote " + std::to_string(gap - later) + " of them later. "
                    "Launch everything on the stream the launcher is given.";
        } else {
          *code = Code::StaleAfterTiming;
          *unfair = what + ": " + sample + " left " + std::to_string(gap) + " output elements unwritten (they still "
                    "hold the poison written before it): the launcher skipped work on that call. Compute from the "
                    "inputs on every call.";
        }
        return samples;
      }
    }
    waits.push_back(device_sync_with_deadline(what));
    samples.push_back(stop.ms_since(start));
    const double behind_ms = legacy.ms_since(stop);
    if (behind_ms > std::max(0.010, 0.2 * samples.back())) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "work on the default stream (or a blocking stream) finished %.1f us after the "
                    "timed stream (the timed launch took %.1f us)", behind_ms * 1e3, samples.back() * 1e3);
      *code = Code::OutsideStream;
      *unfair = what + ": " + buf + ": launch everything on the stream the launcher is given.";
      return samples;
    }
    clocks.sample();
    const double spent = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
    if (enough(samples, rule.min, rule.max, rule.noise, spent, rule.budget_ms)) break;
  }
  const double timed_ms = summarize(samples).median;
  const double left_ms = summarize(waits).median - idle_ms;
  if (left_ms > std::max(0.010, 0.2 * timed_ms)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "the GPU was still busy a median of %.1f us after the timed stream had finished "
                  "(the timed launch took %.1f us)", left_ms * 1e3, timed_ms * 1e3);
    *code = Code::OutsideStream;
    *unfair = what + ": left work running: " + buf +
              ". The launcher returns before its work is done, or puts work on a stream of its own: launch "
              "everything on the stream it is given, so the time measured is the time it takes.";
    return samples;
  }
  const Outcome last = t.check_last();
  if (!last.passed()) {
    *code = Code::StaleAfterTiming;
    *unfair = what + ": after timing, the output of the last timed launch is wrong for the inputs it was given "
              "(the inputs change before every timed launch). Does the launcher reuse a result from an earlier "
              "call, or skip work it has seen before? " + last.message;
  }
  return samples;
}

// The SM clock during the samples, read through NVML (loaded at run time: no NVML, no
// reading), and whether the GPU reported a slowdown (thermal or power) meanwhile.
ClockWatch::ClockWatch() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) return;
  auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
  auto by_index = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
  clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib_, "nvmlDeviceGetClockInfo"));
  max_clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib_, "nvmlDeviceGetMaxClockInfo"));
  reasons_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  int dev = 0;
  cudaGetDevice(&dev);
  if (!init || !by_index || !clock_ || init() != 0 || by_index(static_cast<unsigned>(dev), &device_) != 0) {
    device_ = nullptr;
    return;
  }
  unsigned mhz = 0;
  if (max_clock_ && max_clock_(device_, 1 /* SM */, &mhz) == 0) max_mhz_ = mhz;
}

void ClockWatch::reset() {
  mhz_.clear();
  slowdown_ = false;
}

void ClockWatch::sample() {
  if (!device_) return;
  unsigned mhz = 0;
  if (clock_(device_, 1 /* SM */, &mhz) == 0) mhz_.push_back(mhz);
  unsigned long long r = 0;
  // HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80.
  if (reasons_ && reasons_(device_, &r) == 0 && (r & (0x8ull | 0x20ull | 0x40ull | 0x80ull))) slowdown_ = true;
}

double ClockWatch::median_mhz() const {
  if (mhz_.empty()) return 0;
  std::vector<double> v(mhz_.begin(), mhz_.end());
  return summarize(v).median;
}

bool ClockWatch::throttled() const {
  return slowdown_ || (max_mhz_ > 0 && !mhz_.empty() && median_mhz() < 0.85 * max_mhz_);
}

Suite::Suite(std::string chapter, std::string title)
    : chapter_(std::move(chapter)), title_(std::move(title)), args_(chapter_ + "_bench", title_) {
  args_.add_flag("full", "the whole sweep of shapes and every ladder step (default: the headline shapes)", &full_);
  args_.add_string("impl", "only these, comma-separated: student, solution, reference, or a version name",
                   &impl_filter_);
  args_.add_string("shape", "only shapes whose label or text contains this (e.g. --shape=n67108864); a whole label or "
                   "text selects that shape alone", &shape_filter_);
  args_.add_string("dtype", "only this dtype form of each op (f32, bf16, ...)", &dtype_filter_);
  args_.add_string("op", "only this op (e.g. --op=transpose)", &op_filter_);
  args_.add_string("json", "results file (default results/" + chapter_ + "-<date>-<time>.json)", &json_path_);
  args_.add_string("markdown", "also write the table as Markdown to this file (for docs and class notes)",
                   &markdown_path_);
  args_.add_int("samples", "timed samples per case (default: until the median is stable, 10 to 200)", &samples_, 1,
                100000);
  args_.add_flag("remeasure", "measure this GPU's ceilings again instead of using the cache", &remeasure_);
}

void Suite::add(Case c) {
  if (selected(c)) cases_.push_back(std::move(c));
}

namespace {
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
}  // namespace

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

void Suite::run_case(size_t index, void* state_ptr) {
  auto& st = *static_cast<benchmark::State*>(state_ptr);
  for (auto _ : st) {
    st.SetIterationTime(1e-6);
  }
  const Case& c = cases_[index];
  const std::string what = c.op + " " + c.shape + " [" + c.impl + "]";
  // One line per case on stderr, so a slow case shows in a log while the run goes on.
  const auto start = std::chrono::steady_clock::now();
  double check_s = 0;
  measure_case(index, what, &check_s);
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "  [%zu/%zu] %s: %s, check %.1f s, total %.1f s\n", index + 1, cases_.size(), what.c_str(),
               std::string(code_name(results_[index].outcome.code)).c_str(), check_s, total_s);
}

void Suite::measure_case(size_t index, const std::string& what, double* check_s) {
  const Case& c = cases_[index];
  Result& r = results_[index];
  if (!c.skip_reason.empty()) {
    r.outcome = Outcome::fail(Code::Skipped, c.skip_reason);
    return;
  }
  try {
    const auto check_start = std::chrono::steady_clock::now();
    r.outcome = c.verify();  // a kernel is checked before it is timed
    *check_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
    if (!r.outcome.passed()) return;
    Timed timed = c.prepare_timed();
    Stream stream;
    if (profile_range_requested() && g_profiled_cases.insert(index).second) {
      for (int i = 0; i < 3; ++i) {
        timed.next_inputs(stream);
        timed.launch(stream);
      }
      sync_with_deadline(stream, what);
      CUDA_CHECK(cudaProfilerStart());
      timed.launch(stream);
      sync_with_deadline(stream, what);
      CUDA_CHECK(cudaProfilerStop());
    }
    SampleRule rule;
    if (samples_ > 0) rule = {samples_, samples_, 0.0, 1e12};
    std::string unfair;
    Code code = Code::Pass;
    clocks_.reset();
    const std::vector<double> samples = time_fair(timed, stream, rule, what, &unfair, &code, clocks_);
    if (!unfair.empty()) {
      r.outcome = Outcome::fail(code, unfair);
      return;
    }
    TimingOptions hot;
    hot.flush_l2 = false;
    hot.warmup = 1;
    hot.min_samples = 10;
    hot.max_samples = 50;
    hot.min_total_ms = 20;
    r.hot_ms = time_launcher(timed.launch, stream, what, hot);
    r.cold_ms = summarize(samples);
    r.clock_mhz = clocks_.median_mhz();
    r.throttled = clocks_.throttled();
    r.measured = true;
  } catch (const CudaError& e) {
    r.outcome = Outcome::fail(e.sticky ? Code::Fault : Code::LaunchError, what + ": " + e.what());
  } catch (const NotImplemented& e) {
    r.outcome = Outcome::fail(Code::NotImplemented, what + ": " + e.what());
  } catch (const std::exception& e) {
    r.outcome = Outcome::fail(Code::LaunchError, what + ": " + e.what());
  }
}

bool Suite::report() const {
  const auto& dev = g_context->device;
  const auto& meas = g_context->measured.values;
  std::printf("\n%s — %s\n", chapter_.c_str(), title_.c_str());
  std::printf("GPU %s (sm_%d%d, %d SMs), driver %s; %s\n", dev.name.c_str(), dev.major, dev.minor, dev.sms,
              version_text(dev.driver_version).c_str(), seed_hint().c_str());
  std::printf("ceilings: spec %.0f GB/s; measured copy %.0f GB/s (%s)\n", dev.spec.dram_gbps, meas.dram_gbps,
              g_context->measured.from_cache ? "cached" : "measured now");
  std::printf("roofline %% = the time the op cannot beat on the ceilings / its median time; "
              "x ref = reference time / this time; cold L2 (flushed before each sample)\n\n");

  Table t({"op", "shape", "impl", "role", "median us", "±%", "n", "GB/s", "TFLOPS", "%spec", "%meas", "x ref",
           "note"});
  std::string last_group;
  results::Json rows = results::Json::array();
  bool any_throttled = false;
  for (size_t i = 0; i < cases_.size(); ++i) {
    const Case& c = cases_[i];
    const Result& r = results_[i];
    const std::string group = c.op + "|" + c.shape;
    if (!last_group.empty() && group != last_group) t.add_rule();
    last_group = group;
    results::Json row = results::Json::object();
    row["op"] = c.op;
    row["shape"] = c.shape;
    row["impl"] = c.impl;
    row["role"] = role_name(c.role);
    row["bytes"] = c.bytes;
    row["flops"] = c.flops;
    row["peak"] = peak_name(c.peak);
    if (!r.measured) {
      const std::string code(code_name(r.outcome.code));
      t.add_row({c.op, c.shape, c.impl, role_name(c.role), "-", "-", "-", "-", "-", "-", "-", "-",
                 r.outcome.code == Code::Pass ? "not run" : code});
      row["outcome"] = code;
      row["message"] = r.outcome.message;
      rows.push_back(row);
      continue;
    }
    const double s = r.cold_ms.median * 1e-3;
    const double gbps = c.bytes / s / 1e9;
    const double tflops = c.flops / s / 1e12;
    const double spec_pct = roofline_pct(c.bytes, c.flops, c.peak, s, dev.spec);
    const double meas_pct = roofline_pct(c.bytes, c.flops, c.peak, s, meas);
    const double ref = reference_ms(cases_, results_, c);
    const double vs_ref = ref > 0 ? ref / r.cold_ms.median : -1;
    std::string note;
    if (implausible(spec_pct)) note = "ABOVE SPEC: measurement error?";
    else if (r.throttled) note = "THROTTLED";
    else if (r.hot_ms.median < 0.8 * r.cold_ms.median) note = "hot L2 faster";
    any_throttled = any_throttled || r.throttled;
    const double spread = r.cold_ms.median > 0 ? 50.0 * (r.cold_ms.p90 - r.cold_ms.p10) / r.cold_ms.median : 0;
    t.add_row({c.op, c.shape, c.impl, role_name(c.role), fixed(r.cold_ms.median * 1e3, 1), fixed(spread, 1),
               std::to_string(r.cold_ms.n), fixed(gbps, 0), c.flops > 0 ? fixed(tflops, 2) : "-", fixed(spec_pct, 1),
               meas.dram_gbps > 0 ? fixed(meas_pct, 1) : "-", vs_ref > 0 ? fixed(vs_ref, 2) : "-", note});
    row["outcome"] = implausible(spec_pct) ? "implausible" : "pass";
    row["median_us"] = r.cold_ms.median * 1e3;
    row["p10_us"] = r.cold_ms.p10 * 1e3;
    row["p90_us"] = r.cold_ms.p90 * 1e3;
    row["samples"] = r.cold_ms.n;
    row["hot_median_us"] = r.hot_ms.median * 1e3;
    row["gbps"] = gbps;
    row["tflops"] = tflops;
    row["roofline_spec_pct"] = spec_pct;
    row["roofline_measured_pct"] = meas_pct;
    row["vs_reference"] = vs_ref > 0 ? results::Json(vs_ref) : results::Json();
    row["sm_clock_mhz"] = r.clock_mhz;
    row["throttled"] = r.throttled;
    rows.push_back(row);
  }
  std::printf("%s", t.str().c_str());
  bool written = true;
  if (!markdown_path_.empty()) {
    std::ofstream md(markdown_path_);
    md << "GPU " << dev.name << ", measured copy " << fixed(meas.dram_gbps, 0) << " GB/s; median of cold-L2 samples; "
       << "x ref = reference time / this time\n\n" << t.markdown();
    if (!md) {
      std::fprintf(stderr, "error: could not write the Markdown table '%s': check that its folder exists and is "
                   "writable\n", markdown_path_.c_str());
      written = false;
    }
  }
  if (any_throttled) {
    std::printf("\nTHROTTLED: the SM clock fell below 85%% of its maximum (or the GPU reported a thermal/power "
                "slowdown) during those rows; their times are not the GPU's best.\n");
  }

  const results::Json doc = {{"schema_version", 2},
                             {"chapter", chapter_},
                             {"title", title_},
                             {"date", timestamp("%Y-%m-%dT%H:%M:%S")},
                             {"commit", git_commit()},
                             {"seed", static_cast<uint64_t>(run_seed())},
                             {"device", results::device(dev)},
                             {"spec_ceilings", results::spec_ceilings(dev.spec)},
                             {"measured_ceilings", results::measured_ceilings(g_context->measured)},
                             {"results", rows}};

  std::string path = json_path_;
  if (path.empty()) path = "results/" + chapter_ + "-" + timestamp("%Y%m%d-%H%M%S") + ".json";
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path);
  out << doc.dump(1) << "\n";
  if (!out) {
    std::fprintf(stderr, "error: could not write the results file '%s': check that its folder is writable, or give "
                 "another with --json=FILE\n", path.c_str());
    return false;
  }
  std::printf("\nresults: %s\n", path.c_str());
  return written;
}

namespace {
// Google Benchmark's own console table (CPU column, ERROR rows) is not shown: the
// workbook prints its own table.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace

int Suite::run(int argc, char** argv, const std::function<void()>& build_cases) {
  mark_main_started();
  std::vector<std::string> pass;
  try {
    if (!args_.parse(argc, argv, &pass, {"--benchmark_"})) return 0;
    run_seed();  // validates WORKBOOK_SEED
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s_bench: %s\n", chapter_.c_str(), e.what());
    return 2;
  }
  if (const auto reason = gpu_missing_reason()) {
    std::fprintf(stderr, "%s_bench: cannot benchmark: %s\n", chapter_.c_str(), reason->c_str());
    return 1;
  }
  std::vector<char*> bargv;
  for (auto& s : pass) bargv.push_back(s.data());
  int bargc = static_cast<int>(bargv.size());
  benchmark::Initialize(&bargc, bargv.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, bargv.data())) return 2;

  bool files_ok = true;
  try {
    RunContext ctx{query_device(), {}};
    ctx.measured = measured_ceilings(ctx.device, remeasure_);
    g_context = &ctx;
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
      std::fprintf(stderr, "%s_bench: nothing selected (--impl=%s --shape=%s --dtype=%s --op=%s); run with --help\n",
                   chapter_.c_str(), impl_filter_.c_str(), shape_filter_.c_str(), dtype_filter_.c_str(),
                   op_filter_.c_str());
      return 2;
    }
    results_.assign(cases_.size(), Result{});
    for (size_t i = 0; i < cases_.size(); ++i) {
      const Case& c = cases_[i];
      benchmark::RegisterBenchmark((c.op + "/" + c.shape_label + "/" + c.impl).c_str(),
                                   [this, i](benchmark::State& st) { run_case(i, &st); })
          ->UseManualTime()
          ->Iterations(1);
    }
    std::fprintf(stderr, "%s_bench: %zu cases (check, then time each)...\n", chapter_.c_str(), cases_.size());
    SilentReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
    benchmark::Shutdown();
    files_ok = report();
    std::fflush(stdout);  // the table first, then any messages on stderr
    g_context = nullptr;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s_bench: %s\n", chapter_.c_str(), e.what());
    return 1;
  }
  bool all_ok = true;
  for (size_t i = 0; i < cases_.size(); ++i) {
    const Code code = results_[i].outcome.code;
    const bool expected_missing = cases_[i].role == Role::Student && code == Code::NotImplemented;
    if (!results_[i].measured && !expected_missing && !code_is_skip(code)) all_ok = false;
  }
  if (!all_ok) std::fprintf(stderr, "\nsome kernels were not timed: see the 'note' column and the messages below\n");
  for (size_t i = 0; i < cases_.size(); ++i) {
    if (!results_[i].outcome.passed()) {
      std::fprintf(stderr, "  [%s] %s\n", std::string(code_name(results_[i].outcome.code)).c_str(),
                   results_[i].outcome.message.c_str());
    }
  }
  return all_ok && files_ok ? 0 : 1;
}

}  // namespace wb::bench
