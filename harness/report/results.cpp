#include "report/results.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "report/version.h"

namespace wb::results {

namespace {
std::string local_time(const char* fmt) {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, std::localtime(&t));
  return buf;
}
}  // namespace

std::string now_text() { return local_time("%Y-%m-%dT%H:%M:%S"); }

std::string default_path(const std::string& name) {
  return "results/" + name + "-" + local_time("%Y%m%d-%H%M%S") + ".json";
}

Json header(const std::string& program, std::string_view kind) {
  return {{"schema_version", kSchemaVersion},
          {"program", program},
          {"kind", kind},
          {"date", now_text()},
          {"commit", git_commit()}};
}

Json device(const DeviceInfo& d) {
  return {{"name", d.name},
          {"uuid", d.uuid},
          {"compute_capability", d.compute_capability()},
          {"sms", d.sms},
          {"sm_clock_mhz", d.sm_clock_khz / 1e3},
          {"mem_clock_mhz", d.mem_clock_khz / 1e3},
          {"driver", version_text(d.driver_version)},
          {"runtime", version_text(d.runtime_version)}};
}

Json spec_ceilings(const Ceilings& c) {
  return {{"dram_gbps", c.dram_gbps},
          {"fp32_tflops", c.fp32_tflops},
          {"fp16_tflops", c.f16_tflops},
          {"bf16_tflops", c.bf16_tflops},
          {"int8_tops", c.i8_tops}};
}

Json measured_ceilings(const MeasuredCeilings& m) {
  return {{"copy_gbps", m.values.dram_gbps},    {"fp32_tflops", m.values.fp32_tflops},
          {"fp16_tflops", m.values.f16_tflops}, {"bf16_tflops", m.values.bf16_tflops},
          {"int8_tops", m.values.i8_tops},      {"cache", m.cache_path},
          {"from_cache", m.from_cache}};
}

Json model_document(const std::string& tool, const DeviceInfo& d) {
  Json doc = header(tool, kModel);
  doc["tool"] = tool;
  doc["device"] = device(d);
  return doc;
}

Json tuning_document(const std::string& program, const std::string& chapter, const DeviceInfo& d) {
  Json doc = header(program, kTuning);
  doc["chapter"] = chapter;
  doc["device"] = device(d);
  doc["spec_ceilings"] = spec_ceilings(d.spec);
  doc["results"] = Json::array();
  return doc;
}

Json tuning_row(const std::string& op, const std::string& shape, const std::string& impl, const std::string& role,
                const Json& config, const std::string& outcome, const std::string& message, double median_us,
                int64_t samples, double bytes, double flops) {
  Json row = {{"op", op}, {"shape", shape}, {"impl", impl}, {"role", role}};
  if (!config.is_null()) row["config"] = config;
  row["bytes"] = bytes;
  row["flops"] = flops;
  row["outcome"] = outcome;
  if (!message.empty()) row["message"] = message;
  if (median_us > 0) {
    row["median_us"] = median_us;
    row["samples"] = samples;
    row["gbps"] = bytes / (median_us * 1e3);
    row["tflops"] = flops / (median_us * 1e6);
  }
  return row;
}

std::string write(const std::string& path, const Json& doc) {
  const std::string text = doc.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
  if (path == "-") {
    std::cout << text << std::flush;
    return std::cout ? "" : "could not write to standard output";
  }
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return "could not write the results file '" + path + "': check that its folder is writable";
  return "";
}

}  // namespace wb::results
