// main() of a chapter's autotuner (chNN_tune): for every tunable variant linked in (a
// Variant declared .tuned_by(space)), every point of its space is first checked with the
// op's spec (harness/check/check.cu) on the space's awkward check shapes, then on each
// tuning shape checked again and timed with fresh inputs and an L2 flush before each
// sample; the fastest correct point per shape, and the point with the best geometric mean
// over the shapes, are written into configs/<space>.json under this GPU's key, which the
// launcher reads at run time (harness/tune/choose.cpp). The library reference is timed on
// the same shapes.
//
//   build/chNN/bin/chNN_tune [--op=ID] [--impl=NAME] [--shapes=LIST] [--full] [--quick]
//                            [--out=FILE | --out-dir=DIR | --dry-run] [--markdown=FILE] [--json=FILE]
//
// With --json=FILE the whole sweep is also written as a results file (kind tuning, one row per
// point and shape; harness/report/results.schema.json).
//
// Everything on the command line is checked before a GPU is looked for: the op and the
// variant, the shapes, that the output folders exist and that an existing config file is
// one. The config file, the Markdown and the results file appear whole or not at all
// (runtime/output_file.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/options.h"
#include "runtime/output_file.h"
#include "measure/timing.cuh"
#include "report/results.h"
#include "report/table.h"
#include "report/version.h"
#include "declare/op.cuh"
#include "measure/timed.cuh"
#include "tune/choose.cuh"

#ifndef WB_CHAPTER_ID
#error "WB_CHAPTER_ID must name the chapter (set by the build)"
#endif
#ifndef WB_CONFIG_DIR
#define WB_CONFIG_DIR "configs"
#endif

namespace {

constexpr const char* kTool = WB_CHAPTER_ID "_tune";
using Json = wb::tune::Json;

struct Options {
  std::string op, impl, shapes, out, out_dir, markdown, json;
  bool full = false, quick = false, dry_run = false;
};

// One tunable variant to sweep, as the command line settled it.
struct Job {
  const wb::Variant* variant = nullptr;
  const wb::OpBase* op = nullptr;
  const wb::tune::Space* space = nullptr;
  std::vector<wb::Shape> shapes;  // before the op's derived dimensions
  std::string path;               // the config file ("" with --dry-run)
};

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  return buf;
}

std::string read_text(const std::string& path, bool* exists) {
  std::ifstream in(path);
  *exists = static_cast<bool>(in);
  std::stringstream text;
  if (in) text << in.rdbuf();
  return text.str();
}

// The first line of a check's message that says what is wrong (the one after the heading).
std::string what_is_wrong(const wb::Outcome& o) {
  std::istringstream lines(o.message);
  std::string line, first;
  for (int i = 0; std::getline(lines, line) && i < 2; ++i) {
    const auto start = line.find_first_not_of(' ');
    if (start != std::string::npos) first = line.substr(start);
  }
  return std::string(wb::code_name(o.code)) + (first.empty() ? "" : ": " + first);
}

// The variants to tune and where each one's config goes. Throws wb::UsageError for anything
// on the command line that cannot work, so that it is reported before the GPU is looked for.
std::vector<Job> plan(const Options& o) {
  if (!o.op.empty() && wb::find_op(o.op) == nullptr) {
    std::string ops;
    for (const auto& op : wb::all_ops()) ops += (ops.empty() ? "" : ", ") + op->common().id();
    throw wb::UsageError("--op: no op '" + o.op + "' in this chapter; its ops: " + ops);
  }
  std::vector<Job> jobs;
  std::string tunable, tunable_ops;
  std::set<std::string> listed, listed_ops;
  for (const wb::Variant& v : wb::all_variants()) {
    if (v.space != nullptr && listed_ops.insert(v.op).second) tunable_ops += (tunable_ops.empty() ? "" : ", ") + v.op;
    if (v.space == nullptr || (!o.op.empty() && v.op != o.op)) continue;
    if (listed.insert(v.name).second) tunable += (tunable.empty() ? " " : ", ") + v.name;
    if (!o.impl.empty() && v.name != o.impl) continue;
    jobs.push_back({&v, wb::find_op(v.op), v.space, {}, {}});
  }
  if (jobs.empty() && !o.impl.empty()) {
    throw wb::UsageError("--impl: no tunable variant '" + o.impl + "'" + (o.op.empty() ? "" : " of op " + o.op) +
                         "; the tunable ones:" + (tunable.empty() ? " none" : tunable));
  }
  if (jobs.empty() && !o.op.empty()) {
    throw wb::UsageError("--op: op " + o.op + " has no tunable variant; the ops that have one: " +
                         (tunable_ops.empty() ? "none" : tunable_ops));
  }
  if (jobs.empty()) throw wb::UsageError("no tunable variant is linked into this program");
  if (!o.out.empty() && !o.out_dir.empty()) {
    throw wb::UsageError("--out with --out-dir: give the file (--out) or the folder (--out-dir), not both");
  }
  if (o.dry_run && (!o.out.empty() || !o.out_dir.empty())) {
    throw wb::UsageError(std::string("--dry-run with ") + (o.out.empty() ? "--out-dir" : "--out") +
                         ": a dry run writes no config file; leave one of them out");
  }
  std::set<std::string> spaces;
  for (const Job& j : jobs) spaces.insert(j.space->name);
  if (!o.out.empty() && spaces.size() > 1) {
    std::string names;
    for (const auto& s : spaces) names += (names.empty() ? "" : ", ") + s;
    throw wb::UsageError("--out=" + o.out + " names one config file, but " + std::to_string(spaces.size()) +
                         " spaces would be tuned (" + names +
                         "); narrow the sweep with --op or --impl, or "
                         "give a folder with --out-dir");
  }
  if (!o.markdown.empty()) {
    if (auto why = wb::output_path_problem(o.markdown)) throw wb::UsageError("--markdown=" + o.markdown + ": " + *why);
  }
  if (!o.json.empty()) {
    if (auto why = wb::output_path_problem(o.json)) throw wb::UsageError("--json=" + o.json + ": " + *why);
  }
  const char* env_dir = std::getenv("WORKBOOK_CONFIG_DIR");
  for (Job& j : jobs) {
    const wb::OpCommon& c = j.op->common();
    const std::vector<wb::Shape>& base = !j.space->shapes.empty() ? j.space->shapes : c.bench_shapes;
    if (!o.shapes.empty()) {
      j.shapes = wb::tune::parse_shapes(o.shapes, *j.space, base.empty() ? wb::Shape{} : base.front());
    } else {
      j.shapes = base;
      if (o.full) {
        for (const wb::Shape& s : c.full_bench_shapes) {
          bool seen = false;
          for (const wb::Shape& t : j.shapes) seen = seen || t.label() == s.label();
          if (!seen) j.shapes.push_back(s);
        }
      }
    }
    if (j.shapes.empty()) throw wb::UsageError("op " + c.id() + " declares no shapes to tune on; give --shapes");
    if (o.dry_run) continue;
    j.path = !o.out.empty()
                 ? o.out
                 : wb::tune::config_path(o.out_dir.empty() ? env_dir : o.out_dir.c_str(), WB_CONFIG_DIR, j.space->name);
    if (auto why = wb::output_path_problem(j.path)) {
      const std::string flag = !o.out.empty()          ? "--out=" + o.out
                               : !o.out_dir.empty()    ? "--out-dir=" + o.out_dir
                               : (env_dir && *env_dir) ? "WORKBOOK_CONFIG_DIR=" + std::string(env_dir)
                                                       : j.path;
      throw wb::UsageError(flag + ": " + *why);
    }
  }
  return jobs;
}

// An existing config file must be one (the new entry is merged into it); a file that is not
// is left alone and reported before anything is measured. Throws std::runtime_error.
std::optional<Json> existing_config(const std::string& path) {
  bool exists = false;
  const std::string text = read_text(path, &exists);
  if (!exists) return std::nullopt;
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + " is not JSON (" + e.what() + "); move it away or write elsewhere with --out");
  }
  if (!doc.is_object() || !doc.contains("gpus") || !doc["gpus"].is_object()) {
    throw std::runtime_error(path +
                             " is not a config file (no \"gpus\" object); move it away or write elsewhere with --out");
  }
  return doc;
}

struct Timing {
  double us = 0;  // median; 0 when not measured
  int64_t samples = 0;
  std::string outcome;  // a code name: pass, or why the last timed output was refused
};

// Median microseconds of `v` on `shape` (fresh inputs each sample). The last timed output is
// checked against the float64 reference.
Timing time_variant(const wb::OpBase& op, const wb::Variant& v, const wb::Shape& shape, uint64_t seed, bool quick) {
  wb::Stream stream;
  wb::bench::Timed t = wb::prepare_timed(op, v, shape, seed);
  wb::TimingOptions opt;
  opt.min_samples = quick ? 5 : 10;
  opt.max_samples = quick ? 20 : 60;
  opt.min_total_ms = quick ? 5 : 30;
  t.next_inputs(stream);
  const wb::Stats s = wb::time_launcher(t.launch, stream, op.common().id() + " " + v.name + " " + shape.text(), opt);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const wb::Outcome last = t.check_last();
  if (!last.passed()) return {0, 0, std::string(wb::code_name(last.code))};
  return {s.median * 1000.0, s.n, "pass"};
}

// The rate a table shows for a time: TFLOPS when the op counts FLOPs, else GB/s, else us.
struct Rate {
  std::string unit;
  std::function<double(const wb::Shape&, double us)> of;
};
Rate rate_of(const wb::OpCommon& c) {
  if (c.flops) return {"TFLOPS", [&c](const wb::Shape& s, double us) { return c.flops(s) / (us * 1e6); }};
  if (c.bytes) return {"GB/s", [&c](const wb::Shape& s, double us) { return c.bytes(s) / (us * 1e3); }};
  return {"us", [](const wb::Shape&, double us) { return us; }};
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

// Sweeps one variant's space; returns the entry for this GPU, appends its Markdown and its
// results-file rows (the reference, then every point, per shape).
Json tune_one(const Job& job, const Options& o, const cudaDeviceProp& p, const wb::DeviceInfo& dev, uint64_t seed,
              std::string& md, Json& results) {
  const wb::OpBase& op = *job.op;
  const wb::OpCommon& c = op.common();
  const wb::Variant& v = *job.variant;
  const wb::tune::Space& space = *job.space;
  const wb::Variant* reference = nullptr;
  for (const wb::Variant& r : wb::all_variants()) {
    if (r.op == v.op && r.role == wb::Role::Reference && !reference) reference = &r;
  }
  const std::vector<wb::tune::Config> points = space.all();
  std::vector<wb::Shape> shapes = job.shapes;  // derived below
  std::vector<std::string> labels;
  for (wb::Shape& s : shapes) {
    labels.push_back(s.label());
    if (c.derive) c.derive(s);
  }
  std::printf("\n%s: %s on %s, %zu points x %zu shapes\n", c.id().c_str(), v.name.c_str(), p.name, points.size(),
              shapes.size());

  // What the space records of each point, and the check on the awkward shapes.
  std::vector<std::vector<std::pair<std::string, int64_t>>> facts(points.size());
  std::vector<std::string> rejected(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    if (space.facts) facts[i] = space.facts(points[i]);
    for (wb::Shape s : space.check_shapes) {
      if (c.derive) c.derive(s);
      if (space.problem && space.problem(points[i], s)) continue;
      wb::tune::Forced forced(space, points[i]);
      wb::CaseOptions opt;
      opt.seed = seed ^ 0x5u;
      const wb::Outcome check = wb::check_case(op, v, s, opt);
      if (!check.passed()) {
        rejected[i] = "wrong on " + s.text() + ": " + what_is_wrong(check);
        std::printf("  skip %-32s %s\n", space.name_of(points[i]).c_str(), rejected[i].c_str());
        break;
      }
    }
  }

  const Rate rate = rate_of(c);
  std::vector<std::vector<double>> us(points.size(), std::vector<double>(shapes.size(), 0.0));
  std::vector<double> ref_us(shapes.size(), 0.0);
  Json winners = Json::array(), sweep = Json::array();
  wb::Table table({"shape", "winner", "us", rate.unit, "reference us", "x reference", "heuristic us"});
  const size_t total = points.size() * shapes.size();
  size_t done = 0;
  for (size_t si = 0; si < shapes.size(); ++si) {
    const wb::Shape& shape = shapes[si];
    const double bytes = c.bytes ? c.bytes(shape) : 0, flops = c.flops ? c.flops(shape) : 0;
    const auto add_row = [&](const std::string& impl, const std::string& role, const Json& config,
                             const std::string& outcome, const std::string& message, const Timing& t) {
      results["results"].push_back(wb::results::tuning_row(c.id(), shape.text(), impl, role, config, outcome, message,
                                                           t.us, t.samples, bytes, flops));
    };
    if (reference && !wb::cannot_run_here(op, *reference, shape)) {
      const Timing t = time_variant(op, *reference, shape, seed, o.quick);
      ref_us[si] = t.us;
      add_row(reference->name, "reference", Json(), t.outcome, t.us > 0 ? "" : "the last timed output was wrong", t);
    }
    const wb::tune::Config heuristic = space.heuristic(shape, wb::tune::current_facts());
    double best_us = 0, heur_us = 0;
    size_t best = 0;
    for (size_t pi = 0; pi < points.size(); ++pi) {
      const wb::tune::Config& point = points[pi];
      const std::string name = space.name_of(point);
      ++done;
      Json row = {{"shape", labels[si]}, {"config", name}};
      for (const auto& [k, val] : facts[pi]) row[k] = val;
      Json config = point.to_json();
      config["name"] = name;
      const auto row_of = [&](const std::string& outcome, const std::string& message, const Timing& t) {
        add_row(v.name, "solution", config, outcome, message, t);
      };
      std::string skipped = rejected[pi];
      if (!skipped.empty()) {
        row_of("wrong", skipped, {});
      } else if (space.problem) {
        skipped = space.problem(point, shape).value_or("");
        if (!skipped.empty()) row_of("skipped", skipped, {});
      }
      if (skipped.empty()) {
        wb::tune::Forced forced(space, point);
        wb::CaseOptions opt;
        opt.seed = seed ^ 0x7u;
        const wb::Outcome check = wb::check_case(op, v, shape, opt);
        if (!check.passed()) {
          skipped = what_is_wrong(check) + " (failed the check)";
          row_of(std::string(wb::code_name(check.code)), check.message, {});
        } else {
          const Timing t = time_variant(op, v, shape, seed, o.quick);
          row_of(t.outcome, t.us > 0 ? "" : "the last timed output was wrong", t);
          if (t.us > 0)
            us[pi][si] = t.us;
          else
            skipped = t.outcome + " after timing";
        }
      }
      if (!skipped.empty()) {
        row["skipped"] = skipped;
        sweep.push_back(row);
        if (rejected[pi].empty())
          std::printf("[%3zu/%3zu] %-24s %-32s %s\n", done, total, labels[si].c_str(), name.c_str(), skipped.c_str());
        continue;
      }
      row["us"] = us[pi][si];
      sweep.push_back(row);
      std::printf(
          "[%3zu/%3zu] %-24s %-32s %10.2f us %9.2f %s%s\n", done, total, labels[si].c_str(), name.c_str(), us[pi][si],
          rate.of(shape, us[pi][si]), rate.unit.c_str(),
          ref_us[si] > 0 ? (std::string(" ") + wb::fixed(ref_us[si] / us[pi][si], 2) + "x reference").c_str() : "");
      std::fflush(stdout);
      if (point == heuristic) heur_us = us[pi][si];
      if (best_us == 0 || us[pi][si] < best_us) best_us = us[pi][si], best = pi;
    }
    if (best_us == 0) {
      std::printf("  %s: no point passed the check\n", labels[si].c_str());
      continue;
    }
    Json sj = Json::object();
    for (const std::string& d : space.dims) sj[d] = shape[d];
    Json w = {
        {"shape", sj}, {"config", points[best].to_json()}, {"name", space.name_of(points[best])}, {"us", best_us}};
    if (ref_us[si] > 0) w["reference_us"] = ref_us[si];
    winners.push_back(w);
    table.add_row({labels[si], space.name_of(points[best]), wb::fixed(best_us, 2),
                   wb::fixed(rate.of(shape, best_us), 2), wb::fixed(ref_us[si] > 0 ? ref_us[si] : -1, 2),
                   wb::fixed(ref_us[si] > 0 ? ref_us[si] / best_us : -1, 2), wb::fixed(heur_us > 0 ? heur_us : -1, 2)});
  }
  std::printf("%s", table.str().c_str());

  const std::optional<size_t> overall = wb::tune::overall_index(us);
  const bool ref_all = std::all_of(ref_us.begin(), ref_us.end(), [](double t) { return t > 0; });
  const double ref_geomean = ref_all ? geomean(ref_us) : 0;
  Json overall_json;
  if (overall) {
    const double g = geomean(us[*overall]);
    overall_json = {
        {"config", points[*overall].to_json()}, {"name", space.name_of(points[*overall])}, {"geomean_us", g}};
    if (ref_all) overall_json["reference_geomean_us"] = ref_geomean;
    std::printf("overall (best geometric mean over the %zu shapes): %s, %.2f us%s\n", shapes.size(),
                space.name_of(points[*overall]).c_str(), g,
                ref_all ? (std::string(", ") + wb::fixed(ref_geomean / g, 2) + "x the reference").c_str() : "");
  }

  // Markdown: the winners, then the whole sweep (a row per point, a column per shape).
  const auto cell = [&md](const std::string& text) {
    md += ' ';
    md += text;
    md += " |";
  };
  md += "\n### " + c.id() + " (" + v.name + ") on " + p.name +
        "\n\n| shape | winner | us | reference us |\n|---|---|---|---|\n";
  for (const Json& w : winners) {
    std::string shape_text;
    for (const auto& [d, val] : w["shape"].items()) {
      if (!shape_text.empty()) shape_text += ' ';
      shape_text += d + "=" + std::to_string(val.get<int64_t>());
    }
    md += "|";
    cell(shape_text);
    cell(w["name"].get<std::string>());
    cell(wb::fixed(w["us"].get<double>(), 2));
    cell(w.contains("reference_us") ? wb::fixed(w["reference_us"].get<double>(), 2) : std::string("-"));
    md += "\n";
  }
  const std::vector<std::pair<std::string, int64_t>> fact_names =
      points.empty() ? std::vector<std::pair<std::string, int64_t>>{} : facts[0];
  md += "\nThe sweep (" + rate.unit + " per shape; * the overall winner):\n\n| config |";
  for (const auto& f : fact_names) cell(f.first);
  for (const std::string& l : labels) cell(l);
  cell("geomean");
  cell("x reference");
  md += "\n|---|";
  for (size_t i = 0; i < fact_names.size() + labels.size() + 2; ++i) md += "---:|";
  md += "\n";
  if (ref_all) {
    md += "| reference |";
    for (size_t i = 0; i < fact_names.size(); ++i) cell("-");
    std::vector<double> r;
    for (size_t si = 0; si < shapes.size(); ++si) {
      r.push_back(rate.of(shapes[si], ref_us[si]));
      cell(wb::fixed(r.back(), 2));
    }
    cell(wb::fixed(geomean(r), 2));
    cell("1.00");
    md += "\n";
  }
  for (size_t pi = 0; pi < points.size(); ++pi) {
    md += "|";
    cell(space.name_of(points[pi]) + (overall && *overall == pi ? " *" : ""));
    for (const auto& f : facts[pi]) cell(std::to_string(f.second));
    std::vector<double> r;
    for (size_t si = 0; si < shapes.size(); ++si) {
      if (us[pi][si] > 0) r.push_back(rate.of(shapes[si], us[pi][si]));
      cell(us[pi][si] > 0 ? wb::fixed(r.back(), 2) : std::string("-"));
    }
    const bool all = r.size() == shapes.size();
    cell(all ? wb::fixed(geomean(r), 2) : std::string("-"));
    cell(all && ref_all ? wb::fixed(ref_geomean / geomean(us[pi]), 2) : std::string("-"));
    md += "\n";
  }

  Json entry = {{"gpu", std::string(p.name)},
                {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
                {"sms", dev.sms},
                {"date", now_text()},
                {"commit", wb::git_commit()},
                {"space", space.name},
                {"variant", v.name},
                {"winners", winners}};
  if (overall) entry["overall"] = overall_json;
  entry["sweep"] = sweep;
  return entry;
}

int run(const std::vector<Job>& jobs, const Options& o) {
  // An existing config file that is not one stops the run before anything is measured.
  std::vector<std::optional<Json>> existing;
  for (const Job& j : jobs) existing.push_back(j.path.empty() ? std::nullopt : existing_config(j.path));
  if (auto reason = wb::gpu_missing_reason()) {
    std::fprintf(stderr, "%s: %s: the autotuner measures on a GPU and cannot run here\n", kTool, reason->c_str());
    return 1;
  }
  const wb::DeviceInfo dev = wb::query_device();
  int device = 0;
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  const std::string key = wb::tune::gpu_key(p.name, p.major, p.minor);
  const uint64_t seed = wb::run_seed();
  std::printf("%s: %s (sm_%d%d, %d SMs); %s\n", kTool, p.name, p.major, p.minor, dev.sms, wb::seed_hint().c_str());
  std::string md;
  Json results = wb::results::tuning_document(kTool, WB_CHAPTER_ID, dev);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const Json entry = tune_one(j, o, p, dev, seed, md, results);
    if (o.dry_run) {
      std::printf("(--dry-run: no config file written)\n");
      continue;
    }
    const Json doc =
        wb::tune::merge_entry(existing[i] ? &*existing[i] : nullptr,
                              "Tuned configs of " + j.space->name + " per GPU; written by " + kTool, key, entry);
    wb::write_file_atomically(j.path, doc.dump(2) + "\n");
    std::printf("wrote %s (entry \"%s\")\n", j.path.c_str(), key.c_str());
  }
  if (!o.markdown.empty()) {
    wb::write_file_atomically(o.markdown, md);
    std::printf("wrote %s\n", o.markdown.c_str());
  }
  if (!o.json.empty()) {
    const std::string problem =
        wb::write_whole(o.json, [&](const std::string& path) { return wb::results::write(path, results); });
    if (!problem.empty()) throw std::runtime_error(problem);
    std::printf("results: %s\n", o.json.c_str());
  }
  return 0;
}

// An option whose value is a text (an op, a variant, shapes, a path); an empty one is refused.
void add_text(CLI::App& app, const std::string& name, std::string& value, const std::string& help) {
  app.add_option(name, value, help)->transform(wb::cli::not_empty());
}

}  // namespace

int main(int argc, char** argv) {
  wb::mark_main_started();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress reaches a log file even if the run is cut short
  Options o;
  CLI::App app(
      "Sweeps the chapter's tunable kernels on this GPU and writes the winners per GPU into "
      "configs/<space>.json, which the kernels read at run time.",
      kTool);
  wb::cli::conventions(app);
  add_text(app, "--op", o.op, "tune only this op (e.g. softmax_topk/f32)");
  add_text(app, "--impl", o.impl, "tune only this variant (e.g. v5_radix_select)");
  add_text(app, "--shapes", o.shapes,
           "tune on these shapes instead: comma-separated, each the space's dimensions joined by x "
           "(4096x1024x8192 for M, N, K) or one size for all of them (1024)");
  app.add_flag("--full", o.full, "the op's full benchmark shapes too");
  app.add_flag("--quick", o.quick, "fewer samples per point");
  add_text(app, "--out", o.out, "write the config to this file (one space only) instead of configs/<space>.json");
  add_text(app, "--out-dir", o.out_dir,
           "write configs into this folder instead of $WORKBOOK_CONFIG_DIR or the "
           "repository's configs/");
  add_text(app, "--markdown", o.markdown, "also write the winners and the sweep as Markdown tables (for the docs)");
  add_text(app, "--json", o.json,
           "also write every point's time or outcome as a results file (kind tuning; - for "
           "standard output)");
  app.add_flag("--dry-run", o.dry_run, "measure and print, write no config file");
  std::vector<Job> jobs;
  try {
    if (!wb::cli::parse(app, argc, argv)) return 0;
    jobs = plan(o);
  } catch (const wb::UsageError& e) {
    return wb::cli::refuse(app, e.what());
  }
  try {
    return run(jobs, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kTool, e.what());
    return 1;
  }
}
