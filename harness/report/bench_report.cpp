#include "report/bench_report.h"
#include "report/gbench_compat.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/table.h"

namespace wb::report {

namespace {

double to_us(const Run& r, double value) { return value * 1e6 / benchmark::GetTimeUnitMultiplier(r.time_unit); }

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Google Benchmark's cv: the sample standard deviation over the mean.
double cv_of(const std::vector<double>& v) {
  if (v.size() < 2) return -1;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size() - 1);
  return mean > 0 ? 100.0 * std::sqrt(var) / mean : -1;
}

const char* run_type(const Run& r) { return r.run_type == Run::RT_Aggregate ? "aggregate" : "iteration"; }

}  // namespace

std::optional<size_t> Log::find(const std::string& registered_name) const {
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].name == registered_name) return i;
  }
  return std::nullopt;
}

std::optional<size_t> Log::find_instance(const std::string& instance_name) const {
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& n = cases[i].name;
    if (instance_name.compare(0, n.size(), n) == 0 &&
        (instance_name.size() == n.size() || instance_name[n.size()] == '/')) {
      return i;
    }
  }
  return std::nullopt;
}

std::vector<Row> summarize(const Log& log, const std::vector<Run>& runs) {
  struct Seen {
    std::vector<double> us;  // each repetition's mean launch time
    int64_t iterations = 0, repetitions = 0;
    double agg_median_us = -1, agg_cv_pct = -1;
    int64_t agg_iterations = 0, agg_repetitions = 0;
    std::string error;
    bool any = false;
  };
  std::vector<Seen> seen(log.cases.size());
  for (const Run& r : runs) {
    const auto i = log.find(r.run_name.function_name);
    if (!i) continue;
    Seen& s = seen[*i];
    s.any = true;
    if (run_failed(r)) {
      if (s.error.empty()) s.error = run_failure(r);
      continue;
    }
    if (r.run_type == Run::RT_Iteration) {
      s.us.push_back(to_us(r, r.GetAdjustedRealTime()));
      s.iterations += r.iterations;
      ++s.repetitions;
    } else if (r.aggregate_name == "median" && r.aggregate_unit == benchmark::kTime) {
      s.agg_median_us = to_us(r, r.GetAdjustedRealTime());
      s.agg_iterations = r.iterations;
      s.agg_repetitions = r.repetitions;
    } else if (r.aggregate_name == "cv" && r.aggregate_unit == benchmark::kPercentage) {
      s.agg_cv_pct = 100.0 * r.real_accumulated_time;
    }
  }

  const Ceilings& spec = log.run.device.spec;
  const Ceilings& meas = log.run.measured.values;
  std::vector<Row> rows;
  for (size_t i = 0; i < log.cases.size(); ++i) {
    const Seen& s = seen[i];
    if (!s.any && !log.run.listed_only) continue;
    const CaseInfo& c = log.cases[i];
    const CaseResult& res = log.results.size() > i ? log.results[i] : CaseResult{};
    Row row;
    row.index = i;
    if (res.outcome) {
      row.outcome = *res.outcome;
    } else if (!s.error.empty()) {
      row.outcome = Outcome::fail(Code::LaunchError, s.error);
    }
    // Google Benchmark's statistics where it computed them (two repetitions or more); the
    // same ones from the repetitions otherwise (display_aggregates_only hides them).
    row.median_us = s.agg_median_us > 0 ? s.agg_median_us : median_of(s.us);
    row.cv_pct = s.agg_cv_pct >= 0 ? s.agg_cv_pct : cv_of(s.us);
    row.repetitions = s.repetitions > 0 ? s.repetitions : s.agg_repetitions;
    row.samples = s.iterations > 0 ? s.iterations : s.agg_iterations * s.agg_repetitions;
    row.timed = res.outcome && res.outcome->passed() && s.error.empty() && row.median_us > 0;
    if (!row.timed) {
      if (!res.outcome && s.error.empty())
        row.note = "not run";
      else
        row.note = std::string(code_name(row.outcome.code));
      rows.push_back(std::move(row));
      continue;
    }
    const double sec = row.median_us * 1e-6;
    row.gbps = c.bytes / sec / 1e9;
    row.tflops = c.flops / sec / 1e12;
    row.spec_pct = roofline_pct(c.bytes, c.flops, c.peak, sec, spec);
    row.meas_pct = roofline_pct(c.bytes, c.flops, c.peak, sec, meas);
    if (implausible(row.spec_pct)) {
      row.outcome = Outcome::fail(Code::Implausible, "timed above the spec roofline: a measurement error?");
      row.note = "ABOVE SPEC: measurement error?";
    } else if (res.throttled) {
      row.note = "THROTTLED";
    } else if (res.hot_us > 0 && res.hot_us < 0.8 * row.median_us) {
      row.note = "hot L2 faster";
    }
    rows.push_back(std::move(row));
  }
  // x ref: the first timed reference of the same op and shape (the library, when a chapter
  // times several references).
  for (Row& row : rows) {
    if (!row.timed) continue;
    const CaseInfo& c = log.cases[row.index];
    for (const Row& ref : rows) {
      const CaseInfo& r = log.cases[ref.index];
      if (ref.timed && r.role == "reference" && r.op == c.op && r.shape == c.shape) {
        row.vs_reference = ref.median_us / row.median_us;
        break;
      }
    }
  }
  return rows;
}

namespace {

Table make_table(const Log& log, const std::vector<Row>& rows) {
  Table t(
      {"op", "shape", "impl", "role", "median us", "cv %", "n", "GB/s", "TFLOPS", "%spec", "%meas", "x ref", "note"});
  const bool measured_ceiling = log.run.measured.values.dram_gbps > 0;
  std::string last_group;
  for (const Row& r : rows) {
    const CaseInfo& c = log.cases[r.index];
    const std::string group = c.op + "|" + c.shape;
    if (!last_group.empty() && group != last_group) t.add_rule();
    last_group = group;
    if (!r.timed) {
      t.add_row({c.op, c.shape, c.impl, c.role, "-", "-", "-", "-", "-", "-", "-", "-", r.note});
      continue;
    }
    t.add_row({c.op, c.shape, c.impl, c.role, fixed(r.median_us, 1), fixed(r.cv_pct, 1), std::to_string(r.samples),
               fixed(r.gbps, 0), c.flops > 0 ? fixed(r.tflops, 2) : "-", fixed(r.spec_pct, 1),
               measured_ceiling ? fixed(r.meas_pct, 1) : "-", fixed(r.vs_reference, 2), r.note});
  }
  return t;
}

std::string timing_text(const RunInfo& run) {
  const std::string per_rep = run.iterations > 0 ? fmt::format("{} launches", run.iterations)
                                                 : fmt::format("at least {:g} s of GPU time", run.min_time_s);
  return fmt::format("median of {} repetition{} of {} each, one launch per iteration, L2 flushed before each",
                     run.repetitions, run.repetitions == 1 ? "" : "s", per_rep);
}

}  // namespace

std::string table(const Log& log, const std::vector<Row>& rows) {
  const RunInfo& run = log.run;
  const DeviceInfo& dev = run.device;
  std::string out = fmt::format("\n{} — {}\n", run.chapter, run.title);
  out += fmt::format("GPU {} (sm_{}{}, {} SMs), driver {}; {}\n", dev.name, dev.major, dev.minor, dev.sms,
                     version_text(dev.driver_version), run.seed_hint);
  out += fmt::format("ceilings: spec {:.0f} GB/s; measured copy {:.0f} GB/s ({})\n", dev.spec.dram_gbps,
                     run.measured.values.dram_gbps, run.measured.from_cache ? "cached" : "measured now");
  out += "timing: " + timing_text(run) + " (Google Benchmark, CUDA events); cv % = their spread\n";
  out +=
      "roofline % = the time the op cannot beat on the ceilings / its median time; x ref = reference time / this "
      "time\n\n";
  out += make_table(log, rows).str();
  if (std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.note == "THROTTLED"; })) {
    out +=
        "\nTHROTTLED: the SM clock fell below 85% of its maximum (or the GPU reported a thermal/power slowdown) "
        "during those rows; their times are not the GPU's best.\n";
  }
  return out;
}

std::string markdown(const Log& log, const std::vector<Row>& rows) {
  return fmt::format("GPU {}, measured copy {:.0f} GB/s; {}; x ref = reference time / this time\n\n",
                     log.run.device.name, log.run.measured.values.dram_gbps, timing_text(log.run)) +
         make_table(log, rows).markdown();
}

Json context_json(const benchmark::BenchmarkReporter::Context& c) {
  const benchmark::CPUInfo& info = c.cpu_info;
  Json j = {{"date", results::now_text()}, {"host_name", c.sys_info.name}};
  if (benchmark::BenchmarkReporter::Context::executable_name) {
    j["executable"] = benchmark::BenchmarkReporter::Context::executable_name;
  }
  j["num_cpus"] = info.num_cpus;
  j["mhz_per_cpu"] = std::lround(info.cycles_per_second / 1e6);
  if (info.scaling != benchmark::CPUInfo::UNKNOWN)
    j["cpu_scaling_enabled"] = info.scaling == benchmark::CPUInfo::ENABLED;
  j["caches"] = Json::array();
  for (const auto& cache : info.caches) {
    j["caches"].push_back(
        {{"type", cache.type}, {"level", cache.level}, {"size", cache.size}, {"num_sharing", cache.num_sharing}});
  }
  j["load_avg"] = info.load_avg;
  if (const auto* extra = benchmark::internal::GetGlobalContext()) {
    for (const auto& [key, value] : *extra) j[key] = value;  // --benchmark_context=key=value,...
  }
  return j;
}

Json run_json(const Run& r) {
  Json j = {{"name", r.benchmark_name()},
            {"family_index", r.family_index},
            {"per_family_instance_index", r.per_family_instance_index},
            {"run_name", r.run_name.str()},
            {"run_type", run_type(r)},
            {"repetitions", r.repetitions}};
  if (r.run_type != Run::RT_Aggregate) j["repetition_index"] = r.repetition_index;
  j["threads"] = r.threads;
  if (r.run_type == Run::RT_Aggregate) {
    j["aggregate_name"] = r.aggregate_name;
    j["aggregate_unit"] = r.aggregate_unit == benchmark::kPercentage ? "percentage" : "time";
  }
  if (run_failed(r)) {
    j["error_occurred"] = true;
    j["error_message"] = run_failure(r);
  }
  j["iterations"] = r.iterations;
  const bool percentage = r.run_type == Run::RT_Aggregate && r.aggregate_unit == benchmark::kPercentage;
  j["real_time"] = percentage ? r.real_accumulated_time : r.GetAdjustedRealTime();
  j["cpu_time"] = percentage ? r.cpu_accumulated_time : r.GetAdjustedCPUTime();
  j["time_unit"] = benchmark::GetTimeUnitString(r.time_unit);
  for (const auto& [name, counter] : r.counters) j[name] = counter.value;
  if (!r.report_label.empty()) j["label"] = r.report_label;
  return j;
}

Json document(const Log& log, const std::vector<Row>& rows, const Json& context, const std::vector<Run>& runs) {
  const RunInfo& run = log.run;
  Json doc = results::header(run.program, results::kBenchmark);
  doc["chapter"] = run.chapter;
  doc["title"] = run.title;
  doc["seed"] = run.seed;
  doc["device"] = results::device(run.device);
  doc["spec_ceilings"] = results::spec_ceilings(run.device.spec);
  doc["measured_ceilings"] = results::measured_ceilings(run.measured);
  doc["timing"] = {{"repetitions", run.repetitions},
                   {"min_time_s", run.min_time_s},
                   {"iterations", run.iterations > 0 ? Json(run.iterations) : Json()},
                   {"statistic", "median"}};
  if (run.listed_only) doc["timing"]["listed_only"] = true;
  doc["context"] = context;
  doc["benchmarks"] = Json::array();
  for (const Run& r : runs) doc["benchmarks"].push_back(run_json(r));
  Json out = Json::array();
  for (const Row& r : rows) {
    const CaseInfo& c = log.cases[r.index];
    const CaseResult& res = log.results.size() > r.index ? log.results[r.index] : CaseResult{};
    Json row = {{"op", c.op},       {"shape", c.shape}, {"impl", c.impl},
                {"role", c.role},   {"dtype", c.dtype}, {"benchmark", c.name},
                {"bytes", c.bytes}, {"flops", c.flops}, {"peak", peak_name(c.peak)}};
    if (!r.timed) {
      row["outcome"] = res.outcome || r.outcome.code != Code::Pass ? std::string(code_name(r.outcome.code)) : "not_run";
      if (!r.outcome.message.empty()) row["message"] = r.outcome.message;
      out.push_back(std::move(row));
      continue;
    }
    row["outcome"] = std::string(code_name(r.outcome.code));  // pass, or implausible
    row["median_us"] = r.median_us;
    row["cv_pct"] = r.cv_pct >= 0 ? Json(r.cv_pct) : Json();
    row["repetitions"] = r.repetitions;
    row["samples"] = r.samples;
    row["hot_median_us"] = res.hot_us > 0 ? Json(res.hot_us) : Json();
    row["gbps"] = r.gbps;
    row["tflops"] = r.tflops;
    row["roofline_spec_pct"] = r.spec_pct;
    row["roofline_measured_pct"] = r.meas_pct;
    row["vs_reference"] = r.vs_reference > 0 ? Json(r.vs_reference) : Json();
    row["sm_clock_mhz"] = res.sm_clock_mhz;
    row["throttled"] = res.throttled;
    out.push_back(std::move(row));
  }
  doc["results"] = std::move(out);
  return doc;
}

Reporter::Reporter(Log& log, Format format, bool display) : log_(log), format_(format), display_(display) {
  if (format_ == Format::Csv) {
    BENCHMARK_DISABLE_DEPRECATED_WARNING
    csv_ = std::make_unique<benchmark::CSVReporter>();
    BENCHMARK_RESTORE_DEPRECATED_WARNING
  }
}

Reporter::~Reporter() = default;

bool Reporter::ReportContext(const Context& context) {
  context_ = context_json(context);
  if (csv_) {
    csv_->SetOutputStream(&GetOutputStream());
    csv_->SetErrorStream(&GetErrorStream());
    return csv_->ReportContext(context);
  }
  return true;
}

void Reporter::ReportRuns(const std::vector<Run>& runs) {
  if (display_ && log_.on_case_done) {
    for (const Run& r : runs) {
      const auto i = log_.find(r.run_name.function_name);
      if (i && done_.insert(*i).second) log_.on_case_done(*i);
    }
  }
  runs_.insert(runs_.end(), runs.begin(), runs.end());
  if (csv_) csv_->ReportRuns(runs);
}

void Reporter::Finalize() {
  switch (format_) {
    case Format::Table:
      GetOutputStream() << table(log_, rows()) << std::flush;
      break;
    case Format::Json:
      GetOutputStream() << document(log_, rows(), context_, runs_).dump(1, ' ', false, Json::error_handler_t::replace)
                        << "\n"
                        << std::flush;
      break;
    case Format::Csv:
      csv_->Finalize();
      break;
  }
}

}  // namespace wb::report
