// The one results schema: every program that measures something (the chapters' benchmarks,
// the autotuners, the gpt2 tool) writes its results file through these functions, and
// scripts/lib/wb_results.py reads them all. The schema itself, with every field explained, is
// harness/report/results.schema.json; its version is kSchemaVersion:
//
//   { "schema_version": 3, "program": "ch01_bench", "kind": "benchmark" | "tuning" | "model",
//     "date": ..., "commit": ..., "device": {name, uuid, compute_capability, sms, ...},
//     benchmark and tuning: "chapter", "title", "seed", "spec_ceilings", "measured_ceilings",
//                           "results": [one row per case: op, shape, impl, role, outcome, median_us, ...]
//     benchmark also:       "context" and "benchmarks": Google Benchmark's own JSON, unchanged
//     model:                "tool", "runs": [one per set of kernels: ttft_ms, decode_tok_s, ...] }
//
// Plain C++ (no CUDA), host-tested in harness/tests/results_test.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "measure/ceilings.cuh"
#include "runtime/device.cuh"

namespace wb::results {

using Json = nlohmann::ordered_json;  // keys stay in the order they were written

inline constexpr int kSchemaVersion = 3;
inline constexpr std::string_view kBenchmark = "benchmark", kTuning = "tuning", kModel = "model";

// What every results file starts with: schema_version, program, kind, date, commit.
Json header(const std::string& program, std::string_view kind);

// The device, as every results file describes it.
Json device(const DeviceInfo& d);
// The spec ceilings (dram_gbps, fp32_tflops, fp16_tflops, bf16_tflops, int8_tops) and the
// measured ones (copy_gbps, ..., the cache they came from).
Json spec_ceilings(const Ceilings& c);
Json measured_ceilings(const MeasuredCeilings& m);

// A model tool's results file (kind model): the header, "tool" and the device; the tool adds
// "runs", one per set of kernels ({kernels, ttft_ms, decode_tok_s, ...}).
Json model_document(const std::string& tool, const DeviceInfo& d);
// A tuner's results file (kind tuning): the header, the chapter, the device and its spec
// ceilings, and an empty "results" list for tuning_row()s.
Json tuning_document(const std::string& program, const std::string& chapter, const DeviceInfo& d);
// One point of a tuning sweep on one shape: `outcome` a code name (pass, skipped, wrong, ...);
// timed when median_us > 0 (then GB/s and TFLOPS follow from `bytes` and `flops`).
Json tuning_row(const std::string& op, const std::string& shape, const std::string& impl, const std::string& role,
                const Json& config, const std::string& outcome, const std::string& message, double median_us,
                int64_t samples, double bytes, double flops);

// "2026-11-28T10:00:00" (local time).
std::string now_text();
// results/<name>-<date>-<time>.json: where a program writes when not told where.
std::string default_path(const std::string& name);

// Writes `doc` to `path` (its folder created if missing; "-" is standard output). Returns
// an empty string, or why the file could not be written. The file is written in place, so
// /dev/null and /dev/fd/N work.
std::string write(const std::string& path, const Json& doc);

}  // namespace wb::results
