// main() of a chapter's autotuner (chNN_tune): for every tunable variant linked in (a
// Variant declared .tuned_by(space)), every point of its space on every benchmark shape of
// its op is checked with the op's spec (harness/check/check.cu), then timed with fresh
// inputs and an L2 flush before each sample; the fastest correct point per shape is
// written into configs/<space>.json under this GPU's key, which the launcher reads at run
// time (harness/tune/choose.cu). The library reference is timed on the same shapes.
//
// With --json=FILE the whole sweep is also written as a results file (kind tuning, one row per
// point and shape; harness/report/results.schema.json).
//
//   build/chNN/bin/chNN_tune [--op=ID] [--impl=NAME] [--full] [--quick] [--out-dir=DIR] [--markdown=FILE] [--json=FILE]
//                            [--dry-run]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "measure/timing.cuh"
#include "runtime/cli.h"
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

struct Options {
  std::string op, impl, out_dir, markdown, json;
  bool full = false, quick = false, dry_run = false;
};

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
  return buf;
}

struct Timing {
  double us = 0;        // median; 0 when not measured
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

// Writes `entry` for this GPU into the space's file, keeping every other GPU's entry. A
// file that is not a config document is left alone and reported.
using Json = wb::tune::Json;

void write_entry(const std::string& path, const std::string& about, const std::string& key, const Json& entry) {
  std::optional<Json> existing;
  if (std::ifstream in(path); in) {
    std::stringstream text;
    text << in.rdbuf();
    try {
      existing = Json::parse(text.str());
    } catch (const std::exception& e) {
      throw std::runtime_error(path + " is not JSON (" + e.what() + "); move it away and run again");
    }
  }
  const Json doc = wb::tune::merge_entry(existing ? &*existing : nullptr, about, key, entry);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << doc.dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

int run(const Options& o) {
  if (auto reason = wb::gpu_missing_reason()) {
    std::fprintf(stderr, "%s_tune: %s: the autotuner measures on a GPU and cannot run here\n", WB_CHAPTER_ID,
                 reason->c_str());
    return 1;
  }
  const wb::DeviceInfo dev = wb::query_device();
  int device = 0;
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  const std::string key = wb::tune::gpu_key(p.name, p.major, p.minor);
  const uint64_t seed = wb::run_seed();
  std::string md;
  int tuned = 0;
  Json results = wb::results::tuning_document(WB_CHAPTER_ID "_tune", WB_CHAPTER_ID, dev);

  for (const wb::Variant& v : wb::all_variants()) {
    if (v.space == nullptr || (!o.op.empty() && v.op != o.op) || (!o.impl.empty() && v.name != o.impl)) continue;
    const wb::OpBase& op = *wb::find_op(v.op);
    const wb::OpCommon& c = op.common();
    const wb::tune::Space& space = *v.space;
    const wb::Variant* reference = nullptr;
    for (const wb::Variant& r : wb::all_variants()) {
      if (r.op == v.op && r.role == wb::Role::Reference && !reference) reference = &r;
    }
    std::vector<wb::Shape> shapes = c.bench_shapes;
    if (o.full) shapes.insert(shapes.end(), c.full_bench_shapes.begin(), c.full_bench_shapes.end());
    std::printf("\n%s: %s on %s, %zu points x %zu shapes\n", c.id().c_str(), v.name.c_str(), p.name,
                space.all().size(), shapes.size());
    Json winners = Json::array(), sweep = Json::array();
    wb::Table table({"shape", "winner", "us", "GB/s", "reference us", "x reference", "heuristic us"});
    for (wb::Shape shape : shapes) {
      if (c.derive) c.derive(shape);
      double best_us = 0, ref_us = 0, heur_us = 0;
      wb::tune::Config best;
      const double bytes = c.bytes ? c.bytes(shape) : 0, flops = c.flops ? c.flops(shape) : 0;
      // The results file's rows: the reference, then every point of the space.
      const auto add_row = [&](const std::string& impl, const std::string& role, const Json& config,
                               const std::string& outcome, const std::string& message, const Timing& t) {
        results["results"].push_back(wb::results::tuning_row(c.id(), shape.text(), impl, role, config, outcome, message,
                                                             t.us, t.samples, bytes, flops));
      };
      if (reference && !wb::cannot_run_here(op, *reference, shape)) {
        const Timing t = time_variant(op, *reference, shape, seed, o.quick);
        ref_us = t.us;
        add_row(reference->name, "reference", Json(), t.outcome, t.us > 0 ? "" : "the last timed output was wrong", t);
      }
      const wb::tune::Config heuristic = space.heuristic(shape, wb::tune::current_facts());
      for (const wb::tune::Config& point : space.all()) {
        Json row = {{"shape", shape.label()}, {"config", point.name()}};
        Json config = point.to_json();
        config["name"] = point.name();
        const auto row_of = [&](const std::string& outcome, const std::string& message, const Timing& t) {
          add_row(v.name, "solution", config, outcome, message, t);
        };
        if (auto why = space.problem ? space.problem(point, shape) : std::nullopt) {
          row["skipped"] = *why;
          sweep.push_back(row);
          row_of("skipped", *why, {});
          continue;
        }
        wb::tune::Forced forced(space, point);
        wb::CaseOptions opt;
        opt.seed = seed ^ 0x7u;
        const wb::Outcome check = wb::check_case(op, v, shape, opt);
        if (!check.passed()) {
          row["skipped"] = std::string(wb::code_name(check.code)) + ": failed the check";
          std::printf("  %-28s %s: %s\n", point.name().c_str(), shape.label().c_str(), std::string(wb::code_name(check.code)).c_str());
          sweep.push_back(row);
          row_of(std::string(wb::code_name(check.code)), check.message, {});
          continue;
        }
        const Timing t = time_variant(op, v, shape, seed, o.quick);
        row_of(t.outcome, t.us > 0 ? "" : "the last timed output was wrong", t);
        const double us = t.us;
        if (us <= 0) {
          row["skipped"] = t.outcome + " after timing";
          sweep.push_back(row);
          continue;
        }
        row["us"] = us;
        sweep.push_back(row);
        if (point == heuristic) heur_us = us;
        if (best_us == 0 || us < best_us) best_us = us, best = point;
      }
      if (best_us == 0) {
        std::printf("  %s: no point passed the check\n", shape.label().c_str());
        continue;
      }
      std::printf("  %s: %s, %.2f us\n", shape.label().c_str(), best.name().c_str(), best_us);
      Json sj = Json::object();
      for (const std::string& d : space.dims) sj[d] = shape[d];
      Json w = {{"shape", sj}, {"config", best.to_json()}, {"name", best.name()}, {"us", best_us}};
      if (ref_us > 0) w["reference_us"] = ref_us;
      winners.push_back(w);
      const double gbs = c.bytes ? c.bytes(shape) / (best_us * 1e3) : 0;
      table.add_row({shape.label(), best.name(), wb::fixed(best_us, 2), wb::fixed(gbs, 0), wb::fixed(ref_us > 0 ? ref_us : -1, 2),
                     wb::fixed(ref_us > 0 ? ref_us / best_us : -1, 2), wb::fixed(heur_us > 0 ? heur_us : -1, 2)});
    }
    std::printf("%s", table.str().c_str());
    md += "\n### " + c.id() + " (" + v.name + ") on " + p.name + "\n\n| shape | winner | us | reference us |\n|---|---|---|---|\n";
    for (const Json& w : winners) {
      std::string shape_text;
      for (const auto& [d, val] : w["shape"].items()) {
        shape_text += (shape_text.empty() ? "" : " ") + d + "=" + std::to_string(val.get<int64_t>());
      }
      const bool has_ref = w.contains("reference_us");
      md += "| " + shape_text + " | " + w["name"].get<std::string>() + " | " + wb::fixed(w["us"].get<double>(), 2) +
            " | " + (has_ref ? wb::fixed(w["reference_us"].get<double>(), 2) : std::string("-")) + " |\n";
    }
    const Json entry = {{"gpu", std::string(p.name)},
                        {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
                        {"sms", dev.sms},
                        {"date", now_text()},
                        {"commit", wb::git_commit()},
                        {"space", space.name},
                        {"variant", v.name},
                        {"winners", winners},
                        {"sweep", sweep}};
    const std::string path = wb::tune::config_path(o.out_dir.empty() ? std::getenv("WORKBOOK_CONFIG_DIR") : o.out_dir.c_str(),
                                                   WB_CONFIG_DIR, space.name);
    if (o.dry_run) {
      std::printf("(--dry-run: %s not written)\n", path.c_str());
    } else {
      write_entry(path, "Tuned configs of " + space.name + " per GPU; written by " WB_CHAPTER_ID "_tune", key, entry);
      std::printf("wrote %s (entry \"%s\")\n", path.c_str(), key.c_str());
    }
    ++tuned;
  }
  if (tuned == 0) {
    std::string which = o.op.empty() ? "" : " of op '" + o.op + "'";
    if (!o.impl.empty()) which += " named '" + o.impl + "'";
    std::fprintf(stderr, "%s_tune: no tunable variant%s is linked in\n", WB_CHAPTER_ID, which.c_str());
    return 2;
  }
  if (!o.markdown.empty()) {
    std::ofstream out(o.markdown);
    out << md;
    if (!out) throw std::runtime_error("cannot write " + o.markdown);
  }
  if (!o.json.empty()) {
    if (const std::string problem = wb::results::write(o.json, results); !problem.empty()) {
      throw std::runtime_error(problem);
    }
    std::printf("results: %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  wb::mark_main_started();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress reaches a log file even if the run is cut short
  Options o;
  wb::ArgParser args(WB_CHAPTER_ID "_tune", "sweeps the chapter's tunable kernels and writes the winners per GPU");
  args.add_string("op", "tune only this op (e.g. softmax_topk/f32)", &o.op);
  args.add_string("impl", "tune only this variant (e.g. v5_radix_select)", &o.impl);
  args.add_flag("full", "the op's full benchmark shapes too", &o.full);
  args.add_flag("quick", "fewer samples per point", &o.quick);
  args.add_string("out-dir", "write configs here instead of $WORKBOOK_CONFIG_DIR or the repository's configs/", &o.out_dir);
  args.add_string("markdown", "also write the winners as Markdown tables (for the docs)", &o.markdown);
  args.add_string("json", "also write every point's time or outcome as a results file (kind tuning)", &o.json);
  args.add_flag("dry-run", "measure and print, write nothing", &o.dry_run);
  try {
    if (!args.parse(argc, argv)) return 0;
    if (!o.op.empty() && wb::find_op(o.op) == nullptr) throw wb::UsageError("--op: no op '" + o.op + "' in this chapter");
    if (!o.impl.empty()) {
      std::string tunable;
      for (const wb::Variant& v : wb::all_variants()) {
        if (v.space && (o.op.empty() || v.op == o.op) && tunable.find(" " + v.name + ",") == std::string::npos) {
          tunable += " " + v.name + ",";
        }
      }
      if (tunable.find(" " + o.impl + ",") == std::string::npos) {
        if (!tunable.empty()) tunable.pop_back();
        throw wb::UsageError("--impl: no tunable variant '" + o.impl + "'" + (o.op.empty() ? "" : " of op " + o.op) +
                             "; the tunable ones:" + (tunable.empty() ? " none" : tunable));
      }
    }
    return run(o);
  } catch (const wb::UsageError& e) {
    std::fprintf(stderr, "%s_tune: %s\n%s", WB_CHAPTER_ID, e.what(), args.usage().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s_tune: %s\n", WB_CHAPTER_ID, e.what());
    return 1;
  }
}
