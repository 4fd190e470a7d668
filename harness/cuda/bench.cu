#include "cuda/bench.cuh"

#include <benchmark/benchmark.h>
#include <cuda_profiler_api.h>

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

#include "cuda/buffers.cuh"
#include "cuda/ceilings.cuh"
#include "cuda/device.cuh"
#include "cuda/timing.cuh"
#include "host/json.h"
#include "host/rng.h"
#include "host/table.h"
#include "host/version.h"

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

// Timing of a case prepared with prepare_timed. Before each sample: new inputs, finished
// before the sample starts (so no work can hide behind them), then the L2 flush. After each
// sample: a wait for the whole device, compared with the wait on an idle device. After the
// samples: the output of the last timed launch is checked. Sets *unfair, with the reason, when
// work was left running or the last output is wrong.
std::vector<double> time_fair(const Timed& t, cudaStream_t stream, benchmark::State& st, const std::string& what,
                              std::string* unfair) {
  L2Flusher flusher;
  Event start, stop;
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
  for (auto _ : st) {
    t.next_inputs(stream);
    sync_with_deadline(stream, what);
    flusher.flush(stream);
    start.record(stream);
    t.launch(stream);
    stop.record(stream);
    wait_for_event(stop, stream, what);
    waits.push_back(device_sync_with_deadline(what));
    const double ms = stop.ms_since(start);
    st.SetIterationTime(ms * 1e-3);
    samples.push_back(ms);
  }
  const double timed_ms = summarize(samples).median;
  const double left_ms = summarize(waits).median - idle_ms;
  if (left_ms > std::max(0.010, 0.2 * timed_ms)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "the GPU was still busy a median of %.1f us after the timed stream had finished "
                  "(the timed launch took %.1f us)", left_ms * 1e3, timed_ms * 1e3);
    *unfair = what + ": left work running: " + buf +
              ". The launcher returns before its work is done, or puts work on a stream of its own: launch "
              "everything on the stream it is given, so the time measured is the time it takes.";
    return samples;
  }
  const Outcome last = t.check_last();
  if (!last.passed()) {
    *unfair = what + ": after timing, the output of the last timed launch is wrong for the inputs it was given "
              "(the inputs change before every timed launch). Does the launcher reuse a result from an earlier "
              "call, or skip work it has seen before? [" + kind_name(last.kind) + "] " + last.message;
  }
  return samples;
}

}  // namespace

// Timed samples of one case: enough for about 0.1 s at the case's roofline time (the
// fastest it could run on this GPU's measured ceilings), at least 10 and at most 100. A
// fixed count keeps a run short and predictable: every sample waits for an L2 flush and new
// inputs, which cost more than a fast kernel, so a minimum time per case would mean
// thousands of samples. The median of 10 to 100 samples is stable to well under 1%.
int64_t default_samples(const Case& c, const Ceilings& measured) {
  const double floor_s = roofline_pct(c.bytes, c.flops, c.peak, 1.0, measured) / 100.0;  // time at 100%
  if (!(floor_s > 0)) return 30;
  return std::clamp<int64_t>(static_cast<int64_t>(0.1 / floor_s), 10, 100);
}

Suite::Suite(std::string chapter, std::string title)
    : chapter_(std::move(chapter)), title_(std::move(title)), args_(chapter_ + "_bench", title_) {
  args_.add_flag("quick", "fewer and smaller shapes", &quick_);
  args_.add_string("impl", "only these, comma-separated: student, solution, reference, or a version name",
                   &impl_filter_);
  args_.add_string("json", "results file (default results/" + chapter_ + "-<date>-<time>.json)", &json_path_);
  args_.add_int("samples", "timed samples per case (default: about 0.1 s of the roofline time, 10 to 100)",
                &samples_, 1, 100000);
  args_.add_flag("remeasure", "measure this GPU's ceilings again instead of using the cache", &remeasure_);
}

void Suite::add(Case c) {
  if (selected(c)) cases_.push_back(std::move(c));
}

bool Suite::selected(const Case& c) const {
  if (impl_filter_.empty()) return true;
  size_t start = 0;
  while (start <= impl_filter_.size()) {
    const size_t end = impl_filter_.find(',', start);
    const std::string item = impl_filter_.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (item == role_name(c.role) || item == c.impl) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

void Suite::run_case(size_t index, void* state_ptr) {
  auto& st = *static_cast<benchmark::State*>(state_ptr);
  const Case& c = cases_[index];
  Result& r = results_[index];
  const std::string what = c.op + " " + c.shape + " [" + c.impl + "]";
  try {
    // A kernel is checked before it is timed, once per case.
    if (r.outcome.message.empty() && !r.measured) {
      r.outcome = c.verify();
      if (r.outcome.passed()) r.outcome.message = "checked";
    }
    if (!r.outcome.passed()) {
      st.SkipWithError(kind_name(r.outcome.kind));
      return;
    }
    // Google Benchmark calls a case several times while it settles the iteration count;
    // its inputs are prepared once and freed when the next case starts.
    if (prepared_index_ != index) {
      prepared_launch_ = nullptr;
      prepared_timed_ = Timed{};
      if (c.prepare_timed) {
        prepared_timed_ = c.prepare_timed();
        prepared_launch_ = prepared_timed_.launch;
      } else {
        prepared_launch_ = c.prepare();
      }
      prepared_index_ = index;
    }
    const auto& launch = prepared_launch_;
    Stream stream;
    std::vector<double> samples;
    if (c.prepare_timed) {
      if (profile_range_requested() && g_profiled_cases.insert(index).second) {
        for (int i = 0; i < 3; ++i) {
          prepared_timed_.next_inputs(stream);
          launch(stream);
        }
        sync_with_deadline(stream, what);
        CUDA_CHECK(cudaProfilerStart());
        launch(stream);
        sync_with_deadline(stream, what);
        CUDA_CHECK(cudaProfilerStop());
      }
      std::string unfair;
      samples = time_fair(prepared_timed_, stream, st, what, &unfair);
      if (!unfair.empty()) {
        r.outcome = Outcome::wrong(unfair);
        r.measured = false;
        st.SkipWithError(kind_name(r.outcome.kind));
        return;
      }
    } else {
      L2Flusher flusher;
      Event start, stop;
      for (int i = 0; i < 3; ++i) launch(stream);
      sync_with_deadline(stream, what);
      if (profile_range_requested() && g_profiled_cases.insert(index).second) {
        CUDA_CHECK(cudaProfilerStart());
        launch(stream);
        sync_with_deadline(stream, what);
        CUDA_CHECK(cudaProfilerStop());
      }
      for (auto _ : st) {
        flusher.flush(stream);
        start.record(stream);
        launch(stream);
        stop.record(stream);
        sync_with_deadline(stream, what);
        const double ms = stop.ms_since(start);
        st.SetIterationTime(ms * 1e-3);
        samples.push_back(ms);
      }
    }
    TimingOptions hot;
    hot.flush_l2 = false;
    hot.warmup = 1;
    hot.min_samples = 10;
    hot.max_samples = 50;
    hot.min_total_ms = 20;
    r.hot_ms = time_launcher(launch, stream, what, hot);
    r.cold_ms = summarize(samples);
    r.measured = true;
    const double s = r.cold_ms.median * 1e-3;
    st.counters["median_us"] = r.cold_ms.median * 1e3;
    st.counters["GB/s"] = c.bytes / s / 1e9;
    if (c.flops > 0) st.counters["TFLOPS"] = c.flops / s / 1e12;
    st.counters["roof%spec"] = roofline_pct(c.bytes, c.flops, c.peak, s, g_context->device.spec);
    st.counters["roof%meas"] = roofline_pct(c.bytes, c.flops, c.peak, s, g_context->measured.values);
  } catch (const CudaError& e) {
    r.outcome = {e.sticky ? Outcome::Kind::Fault : Outcome::Kind::LaunchError, what + ": " + e.what()};
    st.SkipWithError(kind_name(r.outcome.kind));
  } catch (const std::exception& e) {
    r.outcome = {Outcome::Kind::LaunchError, what + ": " + e.what()};
    st.SkipWithError(kind_name(r.outcome.kind));
  }
}

void Suite::report() const {
  const auto& dev = g_context->device;
  const auto& meas = g_context->measured.values;
  std::printf("\n%s — %s\n", chapter_.c_str(), title_.c_str());
  std::printf("GPU %s (sm_%d%d, %d SMs), driver %s; %s\n", dev.name.c_str(), dev.major, dev.minor, dev.sms,
              version_text(dev.driver_version).c_str(), seed_hint().c_str());
  std::printf("ceilings: spec %.0f GB/s; measured copy %.0f GB/s (%s)\n", dev.spec.dram_gbps, meas.dram_gbps,
              g_context->measured.from_cache ? "cached" : "measured now");
  std::printf("roofline %% = the time the op cannot beat on the ceilings / its median time; "
              "x ref = reference time / this time\n\n");

  Table t({"op", "shape", "impl", "role", "median us", "spread%", "hot us", "GB/s", "TFLOPS", "%spec",
           "%meas", "x ref", "note"});
  std::string last_group;
  Json rows = Json::array();
  for (size_t i = 0; i < cases_.size(); ++i) {
    const Case& c = cases_[i];
    const Result& r = results_[i];
    const std::string group = c.op + "|" + c.shape;
    if (!last_group.empty() && group != last_group) t.add_rule();
    last_group = group;
    Json row = Json::object();
    row.set("op", c.op);
    row.set("shape", c.shape);
    row.set("impl", c.impl);
    row.set("role", role_name(c.role));
    row.set("bytes", c.bytes);
    row.set("flops", c.flops);
    row.set("peak", peak_name(c.peak));
    if (!r.measured) {
      const std::string verdict = r.outcome.message.empty() ? "not run" : kind_name(r.outcome.kind);
      t.add_row({c.op, c.shape, c.impl, role_name(c.role), "-", "-", "-", "-", "-", "-", "-", "-", verdict});
      row.set("verdict", verdict);
      row.set("message", r.outcome.message);
      rows.push(row);
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
    else if (r.hot_ms.median < 0.8 * r.cold_ms.median) note = "hot L2 faster";
    t.add_row({c.op, c.shape, c.impl, role_name(c.role), fixed(r.cold_ms.median * 1e3, 1),
               fixed(r.cold_ms.spread_pct(), 1), fixed(r.hot_ms.median * 1e3, 1), fixed(gbps, 0),
               c.flops > 0 ? fixed(tflops, 2) : "-", fixed(spec_pct, 1), meas.dram_gbps > 0 ? fixed(meas_pct, 1) : "-",
               vs_ref > 0 ? fixed(vs_ref, 2) : "-", note});
    row.set("verdict", implausible(spec_pct) ? "implausible" : "pass");
    row.set("median_us", r.cold_ms.median * 1e3);
    row.set("p10_us", r.cold_ms.p10 * 1e3);
    row.set("p90_us", r.cold_ms.p90 * 1e3);
    row.set("samples", r.cold_ms.n);
    row.set("hot_median_us", r.hot_ms.median * 1e3);
    row.set("gbps", gbps);
    row.set("tflops", tflops);
    row.set("roofline_spec_pct", spec_pct);
    row.set("roofline_measured_pct", meas_pct);
    row.set("vs_reference", vs_ref > 0 ? Json(vs_ref) : Json());
    rows.push(row);
  }
  std::printf("%s", t.str().c_str());

  Json doc = Json::object();
  doc.set("chapter", chapter_);
  doc.set("title", title_);
  doc.set("date", timestamp("%Y-%m-%dT%H:%M:%S"));
  doc.set("commit", git_commit());
  doc.set("seed", static_cast<uint64_t>(run_seed()));
  Json d = Json::object();
  d.set("name", dev.name);
  d.set("uuid", dev.uuid);
  d.set("compute_capability", dev.compute_capability());
  d.set("sms", dev.sms);
  d.set("sm_clock_mhz", dev.sm_clock_khz / 1e3);
  d.set("mem_clock_mhz", dev.mem_clock_khz / 1e3);
  d.set("driver", version_text(dev.driver_version));
  d.set("runtime", version_text(dev.runtime_version));
  doc.set("device", d);
  Json spec = Json::object();
  spec.set("dram_gbps", dev.spec.dram_gbps);
  spec.set("fp32_tflops", dev.spec.fp32_tflops);
  spec.set("fp16_tflops", dev.spec.f16_tflops);
  spec.set("bf16_tflops", dev.spec.bf16_tflops);
  spec.set("int8_tops", dev.spec.i8_tops);
  doc.set("spec_ceilings", spec);
  doc.set("measured_ceilings", g_context->measured.to_json());
  doc.set("results", rows);

  std::string path = json_path_;
  if (path.empty()) path = "results/" + chapter_ + "-" + timestamp("%Y%m%d-%H%M%S") + ".json";
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path);
  if (!out) {
    std::fprintf(stderr, "error: could not write the results file '%s'\n", path.c_str());
    return;
  }
  out << doc.dump() << "\n";
  std::printf("\nresults: %s\n", path.c_str());
}

int Suite::run(int argc, char** argv, const std::function<void()>& build_cases) {
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

  try {
    RunContext ctx{query_device(), {}};
    ctx.measured = measured_ceilings(ctx.device, remeasure_);
    g_context = &ctx;
    build_cases();
    if (cases_.empty()) {
      std::fprintf(stderr, "%s_bench: nothing selected by --impl=%s\n", chapter_.c_str(), impl_filter_.c_str());
      return 2;
    }
    results_.assign(cases_.size(), Result{});
    for (size_t i = 0; i < cases_.size(); ++i) {
      const Case& c = cases_[i];
      benchmark::RegisterBenchmark((c.op + "/" + c.shape + "/" + c.impl).c_str(),
                                   [this, i](benchmark::State& st) { run_case(i, &st); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond)
          ->Iterations(samples_ > 0 ? samples_ : default_samples(c, ctx.measured.values));
    }
    benchmark::RunSpecifiedBenchmarks();
    prepared_launch_ = nullptr;
    prepared_timed_ = Timed{};
    benchmark::Shutdown();
    report();
    std::fflush(stdout);  // the table first, then any messages on stderr
    g_context = nullptr;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s_bench: %s\n", chapter_.c_str(), e.what());
    return 1;
  }
  bool all_ok = true;
  for (size_t i = 0; i < cases_.size(); ++i) {
    const bool expected_missing = cases_[i].role == Role::Student &&
                                  results_[i].outcome.kind == Outcome::Kind::NotImplemented;
    if (!results_[i].measured && !expected_missing) all_ok = false;
  }
  if (!all_ok) std::fprintf(stderr, "\nsome kernels were not timed: see the 'note' column and the messages above\n");
  for (size_t i = 0; i < cases_.size(); ++i) {
    if (!results_[i].outcome.passed()) std::fprintf(stderr, "  %s\n", results_[i].outcome.message.c_str());
  }
  return all_ok ? 0 : 1;
}

}  // namespace wb::bench
