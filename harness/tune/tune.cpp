#include "tune/tune.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/cli.h"

namespace wb::tune {

int64_t Config::operator[](std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v;
  }
  throw std::out_of_range("config " + this->name() + " has no parameter '" + std::string(name) + "'");
}

std::string Config::name() const {
  std::string out;
  for (const auto& [n, v] : values_) out += (out.empty() ? "" : "_") + n + std::to_string(v);
  return out;
}

Json Config::to_json() const {
  Json j = Json::object();
  for (const auto& [n, v] : values_) j[n] = v;
  return j;
}

std::vector<Config> Space::all() const {
  if (!points.empty()) return points;
  std::vector<Config> out{Config{}};
  for (const Param& p : params) {
    std::vector<Config> next;
    for (const Config& c : out) {
      for (int64_t v : p.values) {
        auto values = c.values();
        values.emplace_back(p.name, v);
        next.emplace_back(std::move(values));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string Space::name_of(const Config& c) const { return label ? label(c) : c.name(); }

Config Space::from_json(const Json& j) const {
  if (!j.is_object()) throw std::runtime_error("a config must be an object of parameter values");
  std::vector<std::pair<std::string, int64_t>> values;
  for (const Param& p : params) {
    const auto v = j.find(p.name);
    if (v == j.end() || !v->is_number()) throw std::runtime_error("the config lacks the number '" + p.name + "'");
    const auto x = v->get<int64_t>();
    if (std::find(p.values.begin(), p.values.end(), x) == p.values.end()) {
      throw std::runtime_error(p.name + " = " + std::to_string(x) + " is not one of the values this build has");
    }
    values.emplace_back(p.name, x);
  }
  for (const auto& [key, value] : j.items()) {
    const bool known = std::any_of(params.begin(), params.end(), [&](const Param& p) { return p.name == key; });
    if (!known && key != "name") throw std::runtime_error("unknown parameter '" + key + "'");
  }
  Config c(std::move(values));
  if (!points.empty() && std::find(points.begin(), points.end(), c) == points.end()) {
    throw std::runtime_error(name_of(c) + " is not one of the points this build has");
  }
  return c;
}

std::string gpu_key(const std::string& gpu_name, int major, int minor) {
  return gpu_name + " sm_" + std::to_string(major) + std::to_string(minor);
}

std::string config_path(const char* env_dir, const std::string& default_dir, const std::string& space) {
  std::string dir = (env_dir != nullptr && *env_dir != '\0') ? std::string(env_dir) : default_dir;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  return dir + space + ".json";
}

Tuned read_tuned(std::string_view text, const std::string& path, const std::string& key, const Space& space) {
  const auto fail = [&](const std::string& what) {
    return std::runtime_error(path + ": " + what + " (delete the file or run the autotuner again to rewrite it)");
  };
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const std::exception& e) {
    throw fail(std::string("not JSON: ") + e.what());
  }
  const Json* gpus = doc.is_object() && doc.contains("gpus") ? &doc["gpus"] : nullptr;
  if (gpus == nullptr || !gpus->is_object()) throw fail("no \"gpus\" object");
  Tuned out;
  if (!gpus->contains(key)) return out;
  out.has_entry = true;
  const Json& entry = (*gpus)[key];
  const Json* winners = entry.is_object() && entry.contains("winners") ? &entry["winners"] : nullptr;
  if (winners == nullptr || !winners->is_array()) throw fail("the entry of " + key + " has no \"winners\" list");
  for (const Json& w : *winners) {
    try {
      if (!w.is_object() || !w.contains("shape") || !w["shape"].is_object() || !w.contains("config")) {
        throw std::runtime_error("a winner needs shape and config");
      }
      const Json& shape = w["shape"];
      Winner win;
      for (const std::string& d : space.dims) {
        const auto v = shape.find(d);
        if (v == shape.end() || !v->is_number() || v->get<double>() < 1)
          throw std::runtime_error("its shape lacks dimension " + d);
        win.shape.set(d, v->get<int64_t>());
      }
      win.config = space.from_json(w["config"]);
      if (const auto us = w.find("us"); us != w.end() && us->is_number()) win.us = us->get<double>();
      out.winners.push_back(std::move(win));
    } catch (const std::exception& e) {
      throw fail("a winner of " + key + ": " + e.what());
    }
  }
  if (const auto overall = entry.find("overall"); overall != entry.end() && !overall->is_null()) {
    if (!overall->is_object() || !overall->contains("config")) {
      throw fail("the overall winner of " + key + " has no \"config\"");
    }
    try {
      out.overall = space.from_json((*overall)["config"]);
    } catch (const std::exception& e) {
      throw fail("the overall winner of " + key + ": " + e.what());
    }
  }
  return out;
}

std::vector<Winner> read_winners(std::string_view text, const std::string& path, const std::string& key,
                                 const Space& space) {
  return read_tuned(text, path, key, space).winners;
}

double distance(const Space& space, const Shape& a, const Shape& b) {
  double d = 0;
  for (const std::string& dim : space.dims) {
    const double x = static_cast<double>(std::max<int64_t>(a[dim], 1));
    const double y = static_cast<double>(std::max<int64_t>(b[dim], 1));
    d += std::fabs(std::log(x / y));
  }
  return d;
}

std::optional<Config> nearest(const Space& space, const std::vector<Winner>& winners, const Shape& shape,
                              double within) {
  const Winner* best = nullptr;
  double best_d = 0;
  for (const Winner& w : winners) {
    const double d = distance(space, w.shape, shape);
    if (best == nullptr || d < best_d) best = &w, best_d = d;
  }
  if (best == nullptr || best_d > std::log(within)) return std::nullopt;
  return best->config;
}

std::optional<size_t> overall_index(const std::vector<std::vector<double>>& us) {
  std::optional<size_t> best;
  double best_log = 0;
  for (size_t p = 0; p < us.size(); ++p) {
    if (us[p].empty()) continue;
    double log_sum = 0;
    bool all = true;
    for (double t : us[p]) {
      all = all && t > 0;
      if (t > 0) log_sum += std::log(t);
    }
    if (!all) continue;
    const double mean = log_sum / static_cast<double>(us[p].size());
    if (!best || mean < best_log) best = p, best_log = mean;
  }
  return best;
}

std::vector<Shape> parse_shapes(const std::string& text, const Space& space, const Shape& like) {
  if (space.dims.empty()) throw UsageError("--shapes: the space " + space.name + " matches no dimensions");
  std::string form;
  for (const std::string& d : space.dims) form += (form.empty() ? "" : "x") + d;
  std::vector<Shape> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) throw UsageError("--shapes='" + text + "': an empty shape between commas; give " + form + ",...");
    std::vector<int64_t> sizes;
    std::stringstream parts(item);
    std::string part;
    while (std::getline(parts, part, 'x'))
      sizes.push_back(parse_int("--shapes (" + item + ")", part, 1, int64_t{1} << 31));
    if (!item.empty() && item.back() == 'x') sizes.clear();
    if (sizes.size() == 1) sizes.assign(space.dims.size(), sizes[0]);
    if (sizes.size() != space.dims.size()) {
      throw UsageError("--shapes: '" + item + "' is neither one size (all of " + form + ") nor " + form);
    }
    Shape s = like;
    for (size_t i = 0; i < sizes.size(); ++i) s.set(space.dims[i], sizes[i]);
    out.push_back(s);
  }
  if (out.empty()) throw UsageError("--shapes: no shape given; give " + form + ",...");
  return out;
}

Json merge_entry(const Json* existing, const std::string& about, const std::string& key, const Json& entry) {
  Json doc = Json::object();
  doc["about"] = about;
  Json gpus = Json::object();
  if (existing != nullptr) {
    if (!existing->is_object() || !existing->contains("gpus") || !(*existing)["gpus"].is_object()) {
      throw std::runtime_error("the existing file is not a config document (no \"gpus\" object)");
    }
    gpus = (*existing)["gpus"];
  }
  gpus[key] = entry;
  doc["gpus"] = std::move(gpus);
  return doc;
}

}  // namespace wb::tune
