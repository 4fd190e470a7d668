// The benchmark's reporting on made-up Google Benchmark runs (no GPU): the rows, the roofline
// table, the results file; and the check of Google Benchmark's flags on the command line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "measure/bench_flags.h"
#include "report/bench_report.h"
#include "report/gbench_compat.h"
#include "runtime/cli.h"

namespace wb::report {
namespace {

using GbRun = benchmark::BenchmarkReporter::Run;  // not Run: a test body has its own Run()

// One op on one shape: the library, a solution step twice as fast, the learner's (not
// written); and a second shape where the solution runs above the spec roofline.
Log test_log() {
  Log log;
  log.run.program = "ch01_bench";
  log.run.chapter = "ch01";
  log.run.title = "thread indexing";
  log.run.seed = 42;
  log.run.seed_hint = "seed 42 (repeat with WORKBOOK_SEED=42)";
  log.run.device.name = "Test GPU";
  log.run.device.uuid = "GPU-test";
  log.run.device.major = 9;
  log.run.device.sms = 132;
  log.run.device.driver_version = 13000;
  log.run.device.runtime_version = 13000;
  log.run.device.spec.dram_gbps = 3000;
  log.run.device.spec.fp32_tflops = 60;
  log.run.measured.values.dram_gbps = 2500;
  log.run.measured.values.fp32_tflops = 50;
  log.run.repetitions = 3;
  log.run.min_time_s = 0.01;
  const double bytes = 12e6;  // 12 MB: 5 us at 2400 GB/s
  for (const auto& [shape, label] : {std::pair{"n=1000000", "n1000000"}, std::pair{"n=10", "n10"}}) {
    for (const auto& [impl, role] :
         {std::pair{"cublas_geam", "reference"}, std::pair{"v2_fast", "solution"}, std::pair{"student", "student"}}) {
      log.cases.push_back({std::string("vector_add/f32/") + label + "/" + impl, "vector_add/f32", shape, "f32", impl,
                           role, bytes, bytes / 12, Peak::FP32});
    }
  }
  log.results.assign(log.cases.size(), CaseResult{});
  return log;
}

// `reps` repetitions of `iters` launches, each repetition's mean launch time in `us`, and
// Google Benchmark's aggregates over them.
std::vector<GbRun> runs_of(const std::string& name, const std::vector<double>& us, int64_t iters) {
  std::vector<GbRun> out;
  for (size_t k = 0; k < us.size(); ++k) {
    GbRun r;
    r.run_name.function_name = name;
    r.run_name.time_type = "manual_time";
    r.iterations = iters;
    r.real_accumulated_time = us[k] * 1e-6 * static_cast<double>(iters);
    r.time_unit = benchmark::kMicrosecond;
    r.repetitions = static_cast<int64_t>(us.size());
    r.repetition_index = static_cast<int64_t>(k);
    r.counters["bytes_per_second"] = benchmark::Counter(1e9);
    out.push_back(r);
  }
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  GbRun median = out.front();
  median.run_type = GbRun::RT_Aggregate;
  median.aggregate_name = "median";
  median.real_accumulated_time = sorted[sorted.size() / 2] * 1e-6 * static_cast<double>(iters);
  GbRun cv = median;
  cv.aggregate_name = "cv";
  cv.aggregate_unit = benchmark::kPercentage;
  cv.real_accumulated_time = 0.02;
  out.push_back(median);
  out.push_back(cv);
  return out;
}

std::vector<GbRun> test_runs(Log& log) {
  std::vector<GbRun> runs;
  for (const char* label : {"n1000000", "n10"}) {
    for (auto& r : runs_of(std::string("vector_add/f32/") + label + "/cublas_geam", {10.0, 11.0, 10.5}, 100)) {
      runs.push_back(r);
    }
    const double fast = std::string(label) == "n10" ? 1.0 : 5.0;  // 1 us: 12000 GB/s, above the spec
    for (auto& r : runs_of(std::string("vector_add/f32/") + label + "/v2_fast", {fast, fast * 1.1, fast * 0.9}, 200)) {
      runs.push_back(r);
    }
    GbRun err;
    err.run_name.function_name = std::string("vector_add/f32/") + label + "/student";
    mark_failed(err, "not_implemented: not implemented yet");
    runs.push_back(err);
  }
  for (size_t i = 0; i < log.cases.size(); ++i) {
    if (log.cases[i].role == "student") {
      log.results[i].outcome = Outcome::fail(Code::NotImplemented, "ex1_vector_add.cu: not implemented yet");
    } else {
      log.results[i].outcome = Outcome::pass();
      log.results[i].hot_us = 4.0;
      log.results[i].sm_clock_mhz = 1980;
    }
  }
  return runs;
}

// What the display reporter of `format` prints when every run of test_runs(log) is reported
// at once.
std::string display_all(Log& log, Reporter::Format format) {
  const std::vector<GbRun> runs = test_runs(log);
  Reporter display(log, format, true);
  std::ostringstream out;
  display.SetOutputStream(&out);
  display.ReportContext(benchmark::BenchmarkReporter::Context());
  display.ReportRuns(runs);
  display.Finalize();
  return out.str();
}

TEST(BenchReport, RowsTakeGoogleBenchmarksMedianAndSpread) {
  Log log = test_log();
  const auto rows = summarize(log, test_runs(log));
  ASSERT_EQ(rows.size(), 6u);
  const Row& ref = rows[0];
  EXPECT_TRUE(ref.timed);
  EXPECT_DOUBLE_EQ(ref.median_us, 10.5);
  EXPECT_NEAR(ref.cv_pct, 2.0, 1e-9);
  EXPECT_EQ(ref.samples, 300);
  EXPECT_EQ(ref.repetitions, 3);
  EXPECT_NEAR(ref.vs_reference, 1.0, 1e-12);
  const Row& fast = rows[1];
  EXPECT_NEAR(fast.median_us, 5.0, 1e-9);
  EXPECT_NEAR(fast.gbps, 2400, 1e-6);
  EXPECT_NEAR(fast.meas_pct, 96.0, 1e-6);
  EXPECT_NEAR(fast.vs_reference, 2.1, 1e-9);
  EXPECT_EQ(fast.note, "") << "hot L2 (4 us) is within 80% of cold (5 us)";
  EXPECT_EQ(rows[0].note, "hot L2 faster");
  const Row& student = rows[2];
  EXPECT_FALSE(student.timed);
  EXPECT_EQ(student.outcome.code, Code::NotImplemented);
  EXPECT_EQ(student.note, "not_implemented");
  const Row& above = rows[4];
  EXPECT_TRUE(above.timed);
  EXPECT_EQ(above.outcome.code, Code::Implausible);
  EXPECT_EQ(above.note, "ABOVE SPEC: measurement error?");
}

TEST(BenchReport, WithoutAggregatesTheRepetitionsGiveTheSameStatistics) {
  Log log = test_log();
  std::vector<GbRun> runs = test_runs(log);
  std::erase_if(runs, [](const GbRun& r) { return r.run_type == GbRun::RT_Aggregate; });
  const auto rows = summarize(log, runs);
  EXPECT_DOUBLE_EQ(rows[0].median_us, 10.5);
  EXPECT_NEAR(rows[0].cv_pct, 100.0 * 0.5 / 10.5, 1e-9);  // sample standard deviation 0.5
}

TEST(BenchReport, OnlyCasesThatRanHaveRows) {
  Log log = test_log();
  std::vector<GbRun> runs = test_runs(log);
  std::erase_if(runs, [](const GbRun& r) { return r.run_name.function_name.find("/n10/") != std::string::npos; });
  EXPECT_EQ(summarize(log, runs).size(), 3u);
  log.run.listed_only = true;
  EXPECT_EQ(summarize(log, {}).size(), 6u);
}

TEST(BenchReport, TableShowsTheRooflineColumns) {
  Log log = test_log();
  const std::string t = table(log, summarize(log, test_runs(log)));
  EXPECT_NE(t.find("GPU Test GPU (sm_90, 132 SMs), driver 13.0; seed 42"), std::string::npos) << t;
  EXPECT_NE(t.find("median of 3 repetitions of at least 0.01 s of GPU time each"), std::string::npos) << t;
  EXPECT_NE(t.find("median us"), std::string::npos);
  EXPECT_NE(t.find("cv %"), std::string::npos);
  // The solution's row: 5.0 us, 2 % spread, 600 launches, 2400 GB/s, 80 % of spec, 96 % of
  // measured, 2.10 x the reference.
  EXPECT_NE(t.find("5.0   2.0  600   2400"), std::string::npos) << t;
  EXPECT_NE(t.find("80.0   96.0   2.10"), std::string::npos) << t;
  EXPECT_NE(t.find("not_implemented"), std::string::npos);
  const std::string md = markdown(log, summarize(log, test_runs(log)));
  EXPECT_EQ(md.rfind("GPU Test GPU, measured copy 2500 GB/s", 0), 0u) << md;
  EXPECT_NE(md.find("| vector_add/f32 | n=1000000 | v2_fast | solution | 5.0 |"), std::string::npos) << md;
}

TEST(BenchReport, DocumentIsGoogleBenchmarksJsonWithTheWorkbooksContext) {
  Log log = test_log();
  const std::vector<GbRun> runs = test_runs(log);
  const Json doc = document(log, summarize(log, runs), Json{{"host_name", "h"}}, runs);
  EXPECT_EQ(doc["schema_version"], results::kSchemaVersion);
  EXPECT_EQ(doc["program"], "ch01_bench");
  EXPECT_EQ(doc["kind"], "benchmark");
  EXPECT_EQ(doc["chapter"], "ch01");
  EXPECT_EQ(doc["seed"], 42);
  EXPECT_EQ(doc["device"]["name"], "Test GPU");
  EXPECT_EQ(doc["device"]["compute_capability"], "9.0");
  EXPECT_EQ(doc["spec_ceilings"]["dram_gbps"], 3000.0);
  EXPECT_EQ(doc["measured_ceilings"]["copy_gbps"], 2500.0);
  EXPECT_EQ(doc["timing"]["repetitions"], 3);
  EXPECT_TRUE(doc["timing"]["iterations"].is_null());
  EXPECT_EQ(doc["context"]["host_name"], "h");
  ASSERT_EQ(doc["benchmarks"].size(), runs.size());
  const Json& first = doc["benchmarks"][0];
  EXPECT_EQ(first["name"], "vector_add/f32/n1000000/cublas_geam/manual_time");
  EXPECT_EQ(first["run_type"], "iteration");
  EXPECT_EQ(first["time_unit"], "us");
  EXPECT_DOUBLE_EQ(first["real_time"].get<double>(), 10.0);
  EXPECT_EQ(first["bytes_per_second"], 1e9);
  EXPECT_EQ(doc["benchmarks"][3]["aggregate_name"], "median");
  EXPECT_EQ(doc["benchmarks"][4]["aggregate_unit"], "percentage");
  EXPECT_EQ(doc["benchmarks"][4]["real_time"], 0.02);
  ASSERT_EQ(doc["results"].size(), 6u);
  const Json& solution = doc["results"][1];
  EXPECT_EQ(solution["outcome"], "pass");
  EXPECT_EQ(solution["benchmark"], "vector_add/f32/n1000000/v2_fast");
  EXPECT_NEAR(solution["median_us"].get<double>(), 5.0, 1e-9);
  EXPECT_NEAR(solution["gbps"].get<double>(), 2400, 1e-6);
  EXPECT_NEAR(solution["vs_reference"].get<double>(), 2.1, 1e-9);
  EXPECT_EQ(solution["samples"], 600);
  EXPECT_EQ(solution["hot_median_us"], 4.0);
  EXPECT_EQ(solution["throttled"], false);
  const Json& student = doc["results"][2];
  EXPECT_EQ(student["outcome"], "not_implemented");
  EXPECT_EQ(student["message"], "ex1_vector_add.cu: not implemented yet");
  EXPECT_FALSE(student.contains("median_us"));
  EXPECT_EQ(doc["results"][4]["outcome"], "implausible");
}

// With WB_RESULTS_SAMPLE_DIR set (ctest's results.sample_documents), the document is written
// there too, for scripts/lib/test_wb_results.py to check against the JSON Schema.
TEST(ResultsSample, Benchmark) {
  Log log = test_log();
  const Json doc = Json::parse(display_all(log, Reporter::Format::Json));
  EXPECT_EQ(doc["results"].size(), 6u);
  if (const char* dir = std::getenv("WB_RESULTS_SAMPLE_DIR")) {
    EXPECT_EQ(results::write(std::string(dir) + "/benchmark.json", doc), "");
    log.run.listed_only = true;
    EXPECT_EQ(results::write(std::string(dir) + "/benchmark-listed.json",
                             document(log, summarize(log, {}), Json::object(), {})),
              "");
  }
}

TEST(BenchReport, ListedCasesAreWrittenNotRun) {
  Log log = test_log();
  log.run.listed_only = true;
  const Json doc = document(log, summarize(log, {}), Json::object(), {});
  EXPECT_EQ(doc["timing"]["listed_only"], true);
  ASSERT_EQ(doc["results"].size(), 6u);
  for (const Json& r : doc["results"]) EXPECT_EQ(r["outcome"], "not_run") << r.dump();
  EXPECT_EQ(log.find_instance("vector_add/f32/n10/v2_fast/iterations:10/manual_time"), 4u);
  EXPECT_FALSE(log.find_instance("vector_add/f32/n10/v2_fastest/manual_time").has_value());
}

TEST(BenchReport, DisplayReporterFinishesEachCaseOnceThenPrints) {
  Log log = test_log();
  const std::vector<GbRun> runs = test_runs(log);
  std::vector<size_t> finished;
  log.on_case_done = [&](size_t i) { finished.push_back(i); };
  Reporter display(log, Reporter::Format::Json, true), file(log, Reporter::Format::Json, false);
  std::ostringstream out, file_out;
  display.SetOutputStream(&out);
  file.SetOutputStream(&file_out);
  const benchmark::BenchmarkReporter::Context context;
  ASSERT_TRUE(display.ReportContext(context));
  ASSERT_TRUE(file.ReportContext(context));
  // As Google Benchmark reports a case: its repetitions, then its aggregates.
  for (size_t a = 0; a < runs.size();) {
    size_t b = a;
    while (b < runs.size() && runs[b].run_name.function_name == runs[a].run_name.function_name) ++b;
    std::vector<GbRun> reps, aggs;
    for (size_t k = a; k < b; ++k) (runs[k].run_type == GbRun::RT_Aggregate ? aggs : reps).push_back(runs[k]);
    for (auto* r : {&display, &file}) {
      r->ReportRuns(reps);
      if (!aggs.empty()) r->ReportRuns(aggs);
    }
    a = b;
  }
  display.Finalize();
  file.Finalize();
  EXPECT_EQ(finished, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  const Json doc = Json::parse(out.str());
  EXPECT_EQ(doc["results"].size(), 6u);
  EXPECT_GT(doc["context"]["num_cpus"].get<int>(), 0);
  EXPECT_EQ(Json::parse(file_out.str())["results"], doc["results"]);
}

TEST(BenchReport, TableReporterPrintsTheTable) {
  Log log = test_log();
  const std::string out = display_all(log, Reporter::Format::Table);
  EXPECT_NE(out.find("ch01 — thread indexing"), std::string::npos) << out;
  EXPECT_NE(out.find("ABOVE SPEC"), std::string::npos) << out;
}

}  // namespace
}  // namespace wb::report

namespace wb::bench {
namespace {

TEST(BenchFlags, GoodFlagsAreKeptInOrder) {
  const auto f = check_benchmark_flags({"--benchmark_filter=v3", "--benchmark_repetitions=7", "--benchmark_format=json",
                                        "--benchmark_min_time=0.05", "--benchmark_out=/tmp/x.json",
                                        "--benchmark_list_tests", "--benchmark_context=class=A,room=2", "--v=1"});
  EXPECT_EQ(f.args.size(), 8u);
  EXPECT_EQ(f.filter, "v3");
  EXPECT_EQ(f.repetitions, 7);
  EXPECT_EQ(f.format, "json");
  EXPECT_DOUBLE_EQ(*f.min_time, 0.05);
  EXPECT_EQ(f.out, "/tmp/x.json");
  EXPECT_TRUE(f.list);
  EXPECT_FALSE(check_benchmark_flags({"--benchmark_list_tests=false"}).list);
  EXPECT_FALSE(check_benchmark_flags({}).repetitions.has_value());
}

struct BadFlag {
  const char* arg;
  const char* mentions;
};

class BenchFlagsRefuse : public ::testing::TestWithParam<BadFlag> {};

TEST_P(BenchFlagsRefuse, NamingTheFlag) {
  try {
    check_benchmark_flags({GetParam().arg});
    ADD_FAILURE() << "accepted " << GetParam().arg;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().mentions), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Bad, BenchFlagsRefuse,
    ::testing::Values(BadFlag{"--benchmark_repetitions=abc", "--benchmark_repetitions: 'abc' is not a whole number"},
                      BadFlag{"--benchmark_repetitions=0", "out of range"},
                      BadFlag{"--benchmark_nonsense=1", "--benchmark_filter, --benchmark_list_tests"},
                      BadFlag{"--benchmark_format=xml", "not one of console|json|csv"},
                      BadFlag{"--benchmark_min_time=-1", "not a number of seconds"},
                      BadFlag{"--benchmark_min_time=2x", "not a number of seconds"},
                      BadFlag{"--benchmark_filter=(v3", "not a regular expression"},
                      BadFlag{"--benchmark_out", "needs a value"},
                      BadFlag{"--benchmark_list_tests=maybe", "not true or false"},
                      BadFlag{"--benchmark_context=novalue", "not key=value"},
                      BadFlag{"--benchmark_time_unit=h", "ns|us|ms|s"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(BenchFlags, HelpListsEveryFlag) {
  const std::string h = benchmark_flags_help();
  for (const char* name : {"--benchmark_filter", "--benchmark_repetitions", "--benchmark_min_time",
                           "--benchmark_format", "--benchmark_out", "--benchmark_list_tests"}) {
    EXPECT_NE(h.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace wb::bench
