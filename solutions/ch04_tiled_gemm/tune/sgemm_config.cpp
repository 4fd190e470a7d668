#include "sgemm_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "tune/tune.h"

namespace ch04 {

std::string SgemmConfig::name() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "_w" + std::to_string(wm) + "x" +
         std::to_string(wn) + "_t" + std::to_string(tm) + "x" + std::to_string(tn) + "_n" + std::to_string(threads) + (pf ? "_pf" : "");
}

// The same keys and paths as every tuned config file (harness/tune/tune.h).
std::string gpu_key(const std::string& gpu_name, int major, int minor) {
  return wb::tune::gpu_key(gpu_name, major, minor);
}

std::string sgemm_config_path(const char* env_dir, const std::string& default_dir) {
  return wb::tune::config_path(env_dir, default_dir, "ch04_sgemm");
}

Json config_to_json(const SgemmConfig& c) {
  return {{"bm", c.bm}, {"bn", c.bn}, {"bk", c.bk},           {"wm", c.wm},  {"wn", c.wn},
          {"tm", c.tm}, {"tn", c.tn}, {"threads", c.threads}, {"pf", c.pf}, {"name", c.name()}};
}

SgemmConfig config_from_json(const Json& j) {
  if (!j.is_object()) throw std::runtime_error("a configuration must be a JSON object");
  auto field = [&](const char* name, bool optional = false) {
    const auto v = j.find(name);
    if (v == j.end() && optional) return 0;
    if (v == j.end()) throw std::runtime_error(std::string("the configuration has no \"") + name + "\"");
    if (!v->is_number()) throw std::runtime_error(std::string("\"") + name + "\" must be a number");
    const double d = v->get<double>();
    if (d != static_cast<double>(static_cast<int>(d))) {
      throw std::runtime_error(std::string("\"") + name + "\" must be a whole number");
    }
    return static_cast<int>(d);
  };
  return {field("bm"), field("bn"), field("bk"), field("wm"), field("wn"), field("tm"), field("tn"), field("threads"),
          field("pf", true)};
}

ConfigChoice choose_sgemm_config(const std::optional<std::string>& text, const std::string& path,
                                 const std::string& key, const std::vector<SgemmConfig>& available,
                                 const SgemmConfig& fallback) {
  auto fall_back = [&](const std::string& why) {
    return ConfigChoice{fallback, false, "built-in default (" + why + ")", {}};
  };
  if (!text) return fall_back("no config file at " + path + "; run ch04_autotune to make one");
  try {
    const Json doc = Json::parse(*text);
    if (!doc.is_object() || !doc.contains("gpus") || !doc["gpus"].is_object()) {
      return fall_back(path + " has no \"gpus\" object");
    }
    if (!doc["gpus"].contains(key)) {
      return fall_back(path + " has no entry for '" + key + "'; run ch04_autotune on this GPU");
    }
    const Json& entry = doc["gpus"][key];
    if (!entry.is_object() || !entry.contains("best")) {
      return fall_back("the entry for '" + key + "' in " + path + " has no \"best\"");
    }
    const SgemmConfig c = config_from_json(entry["best"]);
    if (std::find(available.begin(), available.end(), c) == available.end()) {
      return fall_back(path + " names " + c.name() + " for '" + key + "', which this build does not compile");
    }
    ConfigChoice out{c, true, path + ", entry '" + key + "'", {}};
    if (const auto shapes = entry.find("shapes"); shapes != entry.end() && shapes->is_array()) {
      for (const Json& s : *shapes) {
        if (!s.is_object() || !s.contains("shape") || !s.contains("best")) continue;
        if (!s["shape"].is_string() || !s["best"].is_string()) continue;
        auto w = parse_shape_key(s["shape"].get<std::string>());
        const std::string winner = s["best"].get<std::string>();
        const auto it = std::find_if(available.begin(), available.end(),
                                     [&](const SgemmConfig& a) { return a.name() == winner; });
        if (!w || it == available.end()) continue;  // a shape winner this build lacks: the overall best
        w->config = *it;
        out.by_shape.push_back(*w);
      }
    }
    if (!out.by_shape.empty()) {
      out.source += " (" + std::to_string(out.by_shape.size()) + " per-shape winners)";
    }
    return out;
  } catch (const std::exception& e) {
    return fall_back(path + " could not be read: " + e.what());
  }
}

std::optional<ShapeWinner> parse_shape_key(const std::string& key) {
  long long m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(key.c_str(), "M%lld_N%lld_K%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 || k <= 0) {
    return std::nullopt;
  }
  return ShapeWinner{m, n, k, {}};
}

SgemmConfig config_for_shape(const ConfigChoice& choice, long long m, long long n, long long k) {
  const SgemmConfig* best = nullptr;
  double best_distance = std::log(4.0) + 1e-9;  // farther than this: the overall winner
  auto ratio = [](long long a, long long b) { return std::fabs(std::log(double(std::max(a, 1LL)) / double(b))); };
  for (const auto& w : choice.by_shape) {
    const double d = ratio(m, w.m) + ratio(n, w.n) + ratio(k, w.k);
    if (d < best_distance) best_distance = d, best = &w.config;
  }
  return best != nullptr ? *best : choice.config;
}

ConfigChoice choose_sgemm_config_file(const std::string& path, const std::string& key,
                                      const std::vector<SgemmConfig>& available, const SgemmConfig& fallback) {
  std::ifstream in(path);
  if (!in) return choose_sgemm_config(std::nullopt, path, key, available, fallback);
  std::ostringstream text;
  text << in.rdbuf();
  return choose_sgemm_config(text.str(), path, key, available, fallback);
}

Json merge_tune_entry(const Json& existing, const std::string& key, const Json& entry) {
  Json doc = existing.is_null() ? Json::object() : existing;
  if (!doc.is_object()) throw std::runtime_error("the existing config file is not a JSON object");
  if (!doc.contains("about")) {
    doc["about"] = "Winning tile configurations of the chapter 4 SGEMM, per GPU; written by ch04_autotune, "
                   "read by solutions/ch04_tiled_gemm/v8_double_buffering.cu";
  }
  if (!doc.contains("gpus")) doc["gpus"] = Json::object();
  if (!doc["gpus"].is_object()) throw std::runtime_error("\"gpus\" in the existing config file is not an object");
  doc["gpus"][key] = entry;
  return doc;
}

}  // namespace ch04
