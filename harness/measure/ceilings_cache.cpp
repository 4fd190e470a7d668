#include "measure/ceilings_cache.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace wb {

using Json = nlohmann::ordered_json;

std::string ceilings_cache_dir() {
  namespace fs = std::filesystem;
  if (const char* d = std::getenv("WORKBOOK_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return (fs::path(d) / "kernel-workbook").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "kernel-workbook").string();
  return (fs::temp_directory_path() / "kernel-workbook").string();
}

std::optional<Ceilings> read_ceilings_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    const Json j = Json::parse(in);
    const auto number = [&](const char* key) {
      const auto v = j.find(key);
      return v != j.end() && v->is_number() ? v->get<double>() : 0.0;
    };
    Ceilings c;
    c.dram_gbps = number("copy_gbps");
    c.fp32_tflops = number("fp32_tflops");
    c.f16_tflops = number("fp16_tflops");
    c.bf16_tflops = number("bf16_tflops");
    c.i8_tops = number("int8_tops");
    if (c.dram_gbps > 0) return c;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "note: ignoring the unreadable ceilings cache %s (%s); measuring again\n", path.c_str(),
                 e.what());
  }
  return std::nullopt;
}

bool write_ceilings_cache(const std::string& path, const std::string& device, const std::string& uuid,
                          const std::string& driver, const Ceilings& c) {
  const Json j = {{"device", device},
                  {"uuid", uuid},
                  {"driver", driver},
                  {"measured_at", static_cast<int64_t>(std::time(nullptr))},
                  {"copy_gbps", c.dram_gbps},
                  {"fp32_tflops", c.fp32_tflops},
                  {"fp16_tflops", c.f16_tflops},
                  {"bf16_tflops", c.bf16_tflops},
                  {"int8_tops", c.i8_tops}};
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  return static_cast<bool>(out);
}

}  // namespace wb
