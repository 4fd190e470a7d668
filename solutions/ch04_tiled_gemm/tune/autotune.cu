// ch04_autotune — sweeps the tile configurations of the chapter's best SGEMM (v8) over a
// set of shapes on this GPU, and writes the winner into the config file that
// v8_double_buffering reads at run time.
//
//   build/ch04/bin/ch04_autotune
//       [--shapes=1024,2048,4096,4096x1024x8192]   cubes (N) or MxNxK
//       [--out=FILE]          default $WORKBOOK_CONFIG_DIR/ch04_sgemm.json, else <repo>/configs/ch04_sgemm.json
//       [--markdown=FILE]     also write the sweep as a Markdown table (for the docs)
//       [--json=FILE]         also write the sweep as a results file (harness/report/results.schema.json, kind tuning)
//       [--quick]             two shapes, fewer samples
//       [--dry-run]           measure and print, write nothing
//
// For every candidate of kSgemmCandidates (solutions/ch04_tiled_gemm/tune/sgemm_config.h):
//   1. an invalid one is skipped with the reason;
//   2. a valid one is checked on two awkward shapes (primes, misaligned rows, beta != 0
//      and beta == 0) with the chapter's own check (the sgemm/f32 spec of
//      chapters/ch04_tiled_gemm/spec.cu, through wb::check_case), and skipped if wrong;
//   3. on each sweep shape it runs once and is compared with a float64 reference on a
//      sample of C, then timed (CUDA events, L2 flushed before each sample, median).
// The winner has the highest geometric mean of TFLOPS over the shapes. cuBLAS (TF32 off) is
// timed on the same shapes for the "% of cuBLAS" column. Takes well under a minute on an
// H100 for the default shapes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ch04.cuh"
#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "measure/timing.cuh"
#include "report/results.h"
#include "runtime/cli.h"
#include "declare/rng.h"
#include "declare/shapes.h"
#include "report/table.h"
#include "check/tolerance.h"
#include "report/version.h"
#include "ladder.cuh"
#include "sgemm_config.h"
#include "declare/op.cuh"

#ifndef WB_CH04_CONFIG_DIR
#define WB_CH04_CONFIG_DIR "configs"
#endif

namespace ch04 {
namespace {

using Clock = std::chrono::steady_clock;

// The operation swept: C = 1 * A * B + 0.5 * C (C is read and written), packed rows; the
// same as the benchmark's.
constexpr float kBenchAlpha = 1.0f, kBenchBeta = 0.5f;
double sgemm_flops(double m, double n, double k) { return 2.0 * m * n * k; }
using Launch = std::function<void(cudaStream_t)>;

// The chapter's op, as declared in its spec.
const wb::OpBase& sgemm_op() {
  const wb::OpBase* op = wb::find_op("sgemm/f32");
  if (op == nullptr) throw std::logic_error("the sgemm/f32 op is not linked in (chapters/ch04_tiled_gemm/spec.cu)");
  return *op;
}

// The library reference (cuBLAS, TF32 off), as its variant list declares it.
SgemmFn* cublas_launcher() {
  for (const wb::Variant& v : wb::all_variants()) {
    if (v.op == "sgemm/f32" && v.role == wb::Role::Reference) {
      return reinterpret_cast<SgemmFn*>(const_cast<void*>(v.fn));
    }
  }
  throw std::logic_error("no reference variant of sgemm/f32 is linked in (reference/ch04_tiled_gemm)");
}

wb::Shape check_shape(int64_t m, int64_t n, int64_t k, int64_t pad, double alpha, double beta) {
  wb::Shape s{{"M", m}, {"N", n}, {"K", k}, {"pad", pad}};
  s.set_param("alpha", alpha).set_param("beta", beta);
  return s;
}

// The first line of a check's message that says what is wrong (the one after the heading).
std::string what_is_wrong(const wb::Outcome& o) {
  std::istringstream lines(o.message);
  std::string line, first;
  for (int i = 0; std::getline(lines, line) && i < 2; ++i) {
    const auto start = line.find_first_not_of(' ');
    if (start != std::string::npos) first = line.substr(start);
  }
  return std::string(wb::code_name(o.code)) + ": " + first;
}

std::vector<wb::Extent3> parse_shapes(const std::string& text) {
  std::vector<wb::Extent3> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::vector<int64_t> dims;
    std::stringstream parts(item);
    std::string part;
    while (std::getline(parts, part, 'x')) dims.push_back(wb::parse_int("--shapes", part, 1, 1 << 16));
    if (dims.size() == 1) out.push_back({dims[0], dims[0], dims[0]});
    else if (dims.size() == 3) out.push_back({dims[0], dims[1], dims[2]});
    else throw wb::UsageError("--shapes: '" + item + "' is neither N (a cube) nor MxNxK");
  }
  if (out.empty()) throw wb::UsageError("--shapes: no shape given");
  return out;
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  return buf;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One sweep shape: random A, B and C0 on the device, and a float64 reference of
// C = A * B + 0.5 * C0 on a sample of elements (the last row and column included).
struct Problem {
  wb::Extent3 shape;
  int m, n, k;
  wb::DeviceBuffer<float> a, b, c0, c;
  std::vector<int64_t> sample;  // linear indices into C (m x n, packed)
  std::vector<double> expected;
  wb::Tolerance tol;

  Problem(const wb::Extent3& e, wb::Rng& rng)
      : shape(e), m(int(e.m)), n(int(e.n)), k(int(e.k)), c(size_t(e.m) * e.n) {
    const auto ha = wb::random_floats(size_t(m) * k, rng);
    const auto hb = wb::random_floats(size_t(k) * n, rng);
    const auto hc = wb::random_floats(size_t(m) * n, rng);
    a = wb::DeviceBuffer<float>(ha);
    b = wb::DeviceBuffer<float>(hb);
    c0 = wb::DeviceBuffer<float>(hc);
    for (int s = 0; s < 2048; ++s) sample.push_back(rng.range(0, int64_t{m} * n - 1));
    for (int s = 0; s < 64; ++s) {
      sample.push_back(int64_t{m - 1} * n + rng.range(0, n - 1));  // last row
      sample.push_back(rng.range(0, m - 1) * n + (n - 1));        // last column
    }
    for (int64_t i : sample) {
      const int64_t r = i / n, col = i % n;
      double dot = 0;
      for (int p = 0; p < k; ++p) dot += double(ha[r * k + p]) * hb[int64_t{p} * n + col];
      expected.push_back(kBenchAlpha * dot + double(kBenchBeta) * hc[i]);
    }
    tol = wb::tolerance_for(wb::DType::F32, int64_t{k} + 1, 1.0);
  }

  Launch launch(SgemmFn* fn) {
    return [this, fn](cudaStream_t s) {
      fn(m, n, k, kBenchAlpha, a.data(), k, b.data(), n, kBenchBeta, c.data(), n, s);
    };
  }

  // Runs once from C0 and compares the sample; returns "" when right, else what is wrong.
  std::string verify(SgemmFn* fn, cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(c.data(), c0.data(), c.bytes(), cudaMemcpyDeviceToDevice, stream));
    const wb::Outcome o = wb::run_launcher(wb::label_3d(shape), launch(fn), stream);
    if (!o.passed()) return o.message;
    const auto got = c.download();
    int wrong = 0;
    std::string first;
    for (size_t s = 0; s < sample.size(); ++s) {
      if (!tol.allows(expected[s], got[sample[s]])) {
        if (wrong++ == 0) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "(row %lld, col %lld): expected %.7g, got %.7g",
                        static_cast<long long>(sample[s] / n), static_cast<long long>(sample[s] % n), expected[s],
                        double(got[sample[s]]));
          first = buf;
        }
      }
    }
    if (wrong == 0) return {};
    return std::to_string(wrong) + " of " + std::to_string(sample.size()) + " sampled elements wrong, first " + first;
  }
};

struct Measured {
  bool ok = false;
  std::string note;  // why not ok
  double ms = 0, tflops = 0;
  int samples = 0;
};

struct Candidate {
  SgemmConfig config;
  const solution::V8Entry* entry = nullptr;
  std::string skip;  // reason it was not measured
  int regs = 0;
  size_t spill_bytes = 0;
  std::vector<Measured> results;  // one per shape
  double geomean = 0;
};

Measured measure(Problem& p, SgemmFn* fn, cudaStream_t stream, const wb::TimingOptions& opt) {
  Measured r;
  try {
    const std::string bad = p.verify(fn, stream);
    if (!bad.empty()) {
      r.note = "wrong: " + bad;
      return r;
    }
    const wb::Stats st = wb::time_launcher(p.launch(fn), stream, wb::label_3d(p.shape), opt);
    r.ok = true;
    r.ms = st.median;
    r.samples = st.n;
    r.tflops = sgemm_flops(p.m, p.n, p.k) / (st.median * 1e-3) / 1e12;
  } catch (const std::exception& e) {
    r.note = std::string("error: ") + e.what();
  }
  return r;
}

int run(int argc, char** argv) {
  wb::ArgParser args("ch04_autotune",
                     "Sweeps the tile configurations of the chapter 4 SGEMM (v8) on this GPU and writes the "
                     "winner into the config file that the solution reads.");
  std::string out_path, shapes_text, markdown_path, json_path;
  bool quick = false, dry_run = false;
  args.add_string("shapes", "comma-separated cubes (N) or MxNxK (default 1024,2048,4096,4096x1024x8192)",
                  &shapes_text);
  args.add_string("out", "config file to update (default $WORKBOOK_CONFIG_DIR/ch04_sgemm.json, else " +
                             std::string(WB_CH04_CONFIG_DIR) + "/ch04_sgemm.json)",
                  &out_path);
  args.add_string("markdown", "also write the sweep as a Markdown table to this file", &markdown_path);
  args.add_string("json", "also write every configuration's time on every shape as a results file (kind tuning)",
                  &json_path);
  args.add_flag("quick", "two shapes and fewer samples (a smoke test)", &quick);
  args.add_flag("dry-run", "measure and print, but write no config file", &dry_run);
  std::vector<wb::Extent3> shapes;
  try {
    if (!args.parse(argc, argv)) return 0;
    if (shapes_text.empty()) shapes_text = quick ? "1024,2048" : "1024,2048,4096,4096x1024x8192";
    shapes = parse_shapes(shapes_text);
    wb::run_seed();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch04_autotune: %s\n%s", e.what(), args.usage().c_str());
    return 2;
  }
  if (out_path.empty()) out_path = sgemm_config_path(std::getenv("WORKBOOK_CONFIG_DIR"), WB_CH04_CONFIG_DIR);
  if (const auto reason = wb::gpu_missing_reason()) {
    std::fprintf(stderr, "ch04_autotune: cannot tune without a GPU: %s\n", reason->c_str());
    return 1;
  }

  const auto start = Clock::now();
  const wb::DeviceInfo dev = wb::query_device();
  const std::string key = gpu_key(dev.name, dev.major, dev.minor);
  std::printf("ch04_autotune: %s (sm_%d%d, %d SMs); %s\n", dev.name.c_str(), dev.major, dev.minor, dev.sms,
              wb::seed_hint().c_str());
  std::printf("config file: %s%s\n", out_path.c_str(), dry_run ? " (dry run: not written)" : "");
  std::printf("operation: C = %g * A * B + %g * C, FP32, row-major, packed\n\n", kBenchAlpha, kBenchBeta);

  // 1. Which candidates can run at all.
  std::vector<Candidate> cands;
  for (const auto& c : kSgemmCandidates) {
    Candidate cand;
    cand.config = c;
    if (const char* why = sgemm_config_problem(c)) {
      cand.skip = why;
    } else {
      for (const auto& e : solution::v8_registry()) {
        if (e.config == c) cand.entry = &e;
      }
      if (cand.entry == nullptr) {
        cand.skip = "valid, but not compiled into this build";
      } else {
        cudaFuncAttributes attr{};
        CUDA_CHECK(cudaFuncGetAttributes(&attr, cand.entry->kernel));
        cand.regs = attr.numRegs;
        cand.spill_bytes = attr.localSizeBytes;
        int dev = 0, smem_optin = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        if (sgemm_smem_bytes(c) > smem_optin) {
          cand.skip = "needs " + std::to_string(sgemm_smem_bytes(c)) + " bytes of shared memory per block; this GPU "
                      "allows " + std::to_string(smem_optin);
        } else if (attr.maxThreadsPerBlock < c.threads) {
          cand.skip = "needs " + std::to_string(attr.numRegs) + " registers per thread: at most " +
                      std::to_string(attr.maxThreadsPerBlock) + " threads per block fit, not " +
                      std::to_string(c.threads);
        }
      }
    }
    if (!cand.skip.empty()) std::printf("skip  %-30s %s\n", c.name().c_str(), cand.skip.c_str());
    cands.push_back(cand);
  }

  // 2. Each runnable candidate must be right on awkward shapes before it is timed.
  wb::Rng rng = wb::rng_for("ch04_autotune");
  for (auto& cand : cands) {
    if (!cand.skip.empty()) continue;
    wb::Variant variant = wb::variant("sgemm/f32", "v8_" + cand.config.name(), cand.entry->launch);
    variant.role = wb::Role::Solution;
    for (const wb::Shape& s : {check_shape(257, 255, 263, 3, 0.75, -1.25), check_shape(129, 131, 67, 4, 1.0, 0.0)}) {
      wb::CaseOptions opt;
      opt.seed = rng.next();
      const wb::Outcome o = wb::check_case(sgemm_op(), variant, s, opt);
      if (!o.passed()) {
        cand.skip = "wrong on sgemm " + s.text() + ": " + what_is_wrong(o);
        std::printf("skip  %-30s %s\n", cand.config.name().c_str(), cand.skip.c_str());
        break;
      }
    }
  }
  const int runnable =
      static_cast<int>(std::count_if(cands.begin(), cands.end(), [](const Candidate& c) { return c.skip.empty(); }));
  std::printf("\n%d configurations to time on %zu shapes (edge checks passed, %.1f s so far)\n\n", runnable,
              shapes.size(), seconds_since(start));
  if (runnable == 0) {
    std::fprintf(stderr, "ch04_autotune: no configuration can run; nothing to choose from\n");
    return 1;
  }

  // 3. The sweep: check then time every (configuration, shape), cuBLAS first.
  wb::TimingOptions opt;
  opt.warmup = 2;
  opt.min_samples = quick ? 3 : 5;
  opt.max_samples = quick ? 10 : 30;
  opt.min_total_ms = quick ? 20 : 100;
  wb::Stream stream;
  std::vector<Measured> cublas;
  const int total = runnable * static_cast<int>(shapes.size());
  int done = 0;
  for (size_t si = 0; si < shapes.size(); ++si) {
    Problem p(shapes[si], rng);
    const std::string label = wb::label_3d(shapes[si]);
    cublas.push_back(measure(p, cublas_launcher(), stream, opt));
    std::printf("%-20s %-30s %9.3f ms %7.2f TFLOPS   (%s)\n", label.c_str(), "cuBLAS", cublas.back().ms,
                cublas.back().tflops, kReferenceMathMode);
    for (auto& cand : cands) {
      if (!cand.skip.empty()) continue;
      const Measured r = measure(p, cand.entry->launch, stream, opt);
      cand.results.push_back(r);
      ++done;
      if (r.ok) {
        std::printf("[%3d/%3d] %-20s %-30s %9.3f ms %7.2f TFLOPS %6.1f%% of cuBLAS   (%.0f s)\n", done, total,
                    label.c_str(), cand.config.name().c_str(), r.ms, r.tflops,
                    cublas.back().ok ? 100.0 * cublas.back().ms / r.ms : 0.0, seconds_since(start));
      } else {
        std::printf("[%3d/%3d] %-20s %-30s %s\n", done, total, label.c_str(), cand.config.name().c_str(),
                    r.note.c_str());
      }
      std::fflush(stdout);
    }
  }

  // 4. The winner: highest geometric mean of TFLOPS over the shapes, right on all of them.
  const Candidate* best = nullptr;
  for (auto& cand : cands) {
    if (!cand.skip.empty()) continue;
    double log_sum = 0;
    bool all_ok = true;
    for (const auto& r : cand.results) {
      all_ok = all_ok && r.ok;
      if (r.ok) log_sum += std::log(r.tflops);
    }
    if (!all_ok) continue;
    cand.geomean = std::exp(log_sum / double(cand.results.size()));
    if (best == nullptr || cand.geomean > best->geomean) best = &cand;
  }
  if (best == nullptr) {
    std::fprintf(stderr, "ch04_autotune: no configuration was right on every shape; config file not written\n");
    return 1;
  }

  // The summary, as a terminal table and as Markdown.
  std::vector<std::string> header = {"config", "regs", "spill B"};
  for (const auto& s : shapes) header.push_back(wb::label_3d(s) + " TFLOPS");
  header.push_back("geomean");
  header.push_back("% cuBLAS (geomean)");
  wb::Table table(header);
  std::string md = "| " + header[0];
  for (size_t i = 1; i < header.size(); ++i) md += " | " + header[i];
  md += " |\n|";
  for (size_t i = 0; i < header.size(); ++i) md += i == 0 ? " --- |" : " ---: |";
  md += "\n";
  double cublas_log = 0;
  for (const auto& c : cublas) cublas_log += c.ok ? std::log(c.tflops) : 0;
  const double cublas_geomean = std::exp(cublas_log / double(cublas.size()));
  auto add_row = [&](std::vector<std::string> row) {
    md += "|";
    for (const auto& cell : row) md += " " + cell + " |";
    md += "\n";
    table.add_row(std::move(row));
  };
  {
    std::vector<std::string> row = {"cuBLAS (TF32 off)", "-", "-"};
    for (const auto& c : cublas) row.push_back(c.ok ? wb::fixed(c.tflops, 2) : "failed");
    row.push_back(wb::fixed(cublas_geomean, 2));
    row.push_back("100.0");
    add_row(row);
  }
  for (const auto& cand : cands) {
    std::vector<std::string> row = {cand.config.name() + (&cand == best ? " *" : "")};
    if (!cand.skip.empty()) {
      row.push_back(cand.regs ? std::to_string(cand.regs) : "-");
      row.push_back("-");
      for (size_t i = 0; i < shapes.size(); ++i) row.push_back("-");
      row.push_back("skipped");
      row.push_back(cand.skip);
      add_row(row);
      continue;
    }
    row.push_back(std::to_string(cand.regs));
    row.push_back(std::to_string(cand.spill_bytes));
    for (const auto& r : cand.results) row.push_back(r.ok ? wb::fixed(r.tflops, 2) : "wrong");
    row.push_back(cand.geomean > 0 ? wb::fixed(cand.geomean, 2) : "-");
    row.push_back(cand.geomean > 0 ? wb::fixed(100.0 * cand.geomean / cublas_geomean, 1) : "-");
    add_row(row);
  }
  std::printf("\n%s (%s, %.0f s)\n%s", key.c_str(), kReferenceMathMode, seconds_since(start), table.str().c_str());
  std::printf("\nwinner: %s, %.2f TFLOPS geometric mean, %.1f%% of cuBLAS\n", best->config.name().c_str(),
              best->geomean, 100.0 * best->geomean / cublas_geomean);

  // Per-shape winners, for the record (the solution runs the overall winner).
  Json per_shape = Json::array();
  for (size_t si = 0; si < shapes.size(); ++si) {
    const Candidate* w = nullptr;
    for (const auto& cand : cands) {
      if (cand.skip.empty() && cand.results[si].ok && (w == nullptr || cand.results[si].tflops > w->results[si].tflops)) {
        w = &cand;
      }
    }
    per_shape.push_back({{"shape", wb::label_3d(shapes[si])},
                         {"best", w ? w->config.name() : "none"},
                         {"tflops", w ? Json(w->results[si].tflops) : Json()},
                         {"cublas_tflops", cublas[si].ok ? Json(cublas[si].tflops) : Json()}});
  }

  if (!markdown_path.empty()) {
    std::ofstream out(markdown_path);
    out << "Sweep on " << key << " (" << now_text() << ", commit " << wb::git_commit() << "); TFLOPS of C = A*B + "
        << kBenchBeta << "*C, FP32; * marks the winner.\n\n"
        << md;
    std::printf("markdown: %s\n", markdown_path.c_str());
  }
  if (!json_path.empty()) {
    Json doc = wb::results::tuning_document("ch04_autotune", "ch04", dev);
    const auto add = [&](const wb::Extent3& e, const std::string& impl, const char* role, const Json& config,
                         const Measured& r) {
      const std::string outcome = r.ok ? "pass" : r.note.rfind("wrong", 0) == 0 ? "wrong" : "launch_error";
      doc["results"].push_back(wb::results::tuning_row("sgemm/f32", wb::label_3d(e), impl, role, config, outcome,
                                                       r.note, r.ok ? r.ms * 1e3 : 0, r.samples, 0,
                                                       sgemm_flops(e.m, e.n, e.k)));
    };
    for (size_t si = 0; si < shapes.size(); ++si) {
      add(shapes[si], "cublas_sgemm_fp32", "reference", Json(), cublas[si]);
      for (const auto& cand : cands) {
        if (cand.skip.empty()) {
          add(shapes[si], "v8_double_buffering", "solution", config_to_json(cand.config), cand.results[si]);
        } else {
          doc["results"].push_back(wb::results::tuning_row("sgemm/f32", wb::label_3d(shapes[si]), "v8_double_buffering",
                                                           "solution", config_to_json(cand.config), "skipped",
                                                           cand.skip, 0, 0, 0, sgemm_flops(shapes[si].m, shapes[si].n,
                                                                                         shapes[si].k)));
        }
      }
    }
    if (const std::string problem = wb::results::write(json_path, doc); !problem.empty()) {
      std::fprintf(stderr, "ch04_autotune: %s\n", problem.c_str());
      return 1;
    }
    std::printf("results: %s\n", json_path.c_str());
  }
  if (dry_run) return 0;

  Json sweep = Json::array();
  for (const auto& cand : cands) {
    Json j = {{"config", cand.config.name()}};
    if (!cand.skip.empty()) {
      j["status"] = "skipped";
      j["reason"] = cand.skip;
      sweep.push_back(j);
      continue;
    }
    j["status"] = "measured";
    j["registers"] = cand.regs;
    j["spill_bytes"] = static_cast<int64_t>(cand.spill_bytes);
    Json results = Json::array();
    for (size_t si = 0; si < shapes.size(); ++si) {
      const Measured& r = cand.results[si];
      Json x = {{"shape", wb::label_3d(shapes[si])}};
      if (r.ok) {
        x["median_ms"] = r.ms;
        x["tflops"] = r.tflops;
      } else {
        x["error"] = r.note;
      }
      results.push_back(x);
    }
    j["results"] = results;
    j["geomean_tflops"] = cand.geomean > 0 ? Json(cand.geomean) : Json();
    sweep.push_back(j);
  }
  Json best_json = config_to_json(best->config);
  best_json["geomean_tflops"] = best->geomean;
  best_json["geomean_pct_of_cublas"] = 100.0 * best->geomean / cublas_geomean;
  const Json entry = {{"gpu", dev.name},
                      {"compute_capability", dev.compute_capability()},
                      {"sms", dev.sms},
                      {"date", now_text()},
                      {"commit", wb::git_commit()},
                      {"reference", kReferenceMathMode},
                      {"best", best_json},
                      {"shapes", per_shape},
                      {"sweep", sweep}};

  Json existing;
  {
    std::ifstream in(out_path);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      try {
        existing = Json::parse(text.str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ch04_autotune: %s is not valid JSON (%s); refusing to overwrite it\n", out_path.c_str(),
                     e.what());
        return 1;
      }
    }
  }
  const Json doc = merge_tune_entry(existing, key, entry);
  std::error_code ec;
  const auto parent = std::filesystem::path(out_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(out_path);
  if (!out) {
    std::fprintf(stderr, "ch04_autotune: cannot write %s\n", out_path.c_str());
    return 1;
  }
  out << doc.dump(2) << "\n";
  std::printf("wrote %s: '%s' -> %s (v8_double_buffering reads it at its first call)\n", out_path.c_str(),
              key.c_str(), best->config.name().c_str());
  return 0;
}

}  // namespace
}  // namespace ch04

int main(int argc, char** argv) {
  try {
    return ch04::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ch04_autotune: %s\n", e.what());
    return 1;
  }
}
