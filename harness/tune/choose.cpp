// Which config a tunable launcher runs (harness/tune/tune.h): the one the autotuner is
// trying right now, else this GPU's tuned winner nearest the shape (configs/<space>.json),
// else the entry's overall winner (spaces that prefer it), else the space's heuristic.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "tune/choose.cuh"

#ifndef WB_CONFIG_DIR
#define WB_CONFIG_DIR "configs"
#endif

namespace wb::tune {

namespace {

std::mutex g_mutex;
std::map<std::string, Config>& forced() {
  static std::map<std::string, Config> m;
  return m;
}

struct Gpu {
  Facts facts;
  std::string key;
};

// The current GPU, asked once (or, without one, a plan for a one-SM GPU that is never
// launched).
const Gpu& current_gpu() {
  static const Gpu gpu = [] {
    Gpu g;
    int dev = 0;
    cudaDeviceProp p{};
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
      cudaGetLastError();
      g.facts = {1, 0};
      return g;
    }
    g.facts = {p.multiProcessorCount, p.major * 10 + p.minor};
    g.key = gpu_key(p.name, p.major, p.minor);
    return g;
  }();
  return gpu;
}

// What the config file says for this GPU, and where that came from.
struct Known {
  Tuned tuned;
  std::string source;  // for describe()
};

// "ch04_tune" for the space "ch04_sgemm": the chapter's autotuner.
std::string tuner_of(const Space& space) {
  const std::string& n = space.name;
  return n.size() > 4 && n.rfind("ch", 0) == 0 ? n.substr(0, 4) + "_tune" : "the chapter's autotuner";
}

// The tuned configs of a space on this GPU, read once per program.
const Known& known(const Space& space, const std::string& key) {
  static std::map<std::string, Known> cache;
  auto it = cache.find(space.name);
  if (it != cache.end()) return it->second;
  Known k;
  const std::string path = config_path(std::getenv("WORKBOOK_CONFIG_DIR"), WB_CONFIG_DIR, space.name);
  std::ifstream in(path);
  if (key.empty()) {
    k.source = "no GPU";
  } else if (!in) {
    k.source = "no config file " + path + "; run " + tuner_of(space) + " to make one";
  } else {
    std::stringstream text;
    text << in.rdbuf();
    try {
      k.tuned = read_tuned(text.str(), path, key, space);
      if (!k.tuned.has_entry) {
        k.source = path + " has no entry for '" + key + "'; run " + tuner_of(space) + " on this GPU";
      } else {
        k.source = path + ", entry '" + key + "' (" + std::to_string(k.tuned.winners.size()) + " tuned shapes" +
                   (k.tuned.overall ? ", overall " + space.name_of(*k.tuned.overall) : std::string()) + ")";
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kernel-workbook: %s; using the built-in choice instead\n", e.what());
      k.tuned = {};
      k.source = std::string(e.what());
    }
  }
  return cache.emplace(space.name, std::move(k)).first->second;
}

}  // namespace

Config choose(const Space& space, const Shape& shape) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = forced().find(space.name); it != forced().end()) return it->second;
  const Tuned& tuned = known(space, current_gpu().key).tuned;
  const auto usable = [&](const std::optional<Config>& c) {
    return c && (!space.problem || !space.problem(*c, shape));
  };
  if (auto c = nearest(space, tuned.winners, shape); usable(c)) return *c;
  if (space.prefer_overall && usable(tuned.overall)) return *tuned.overall;
  return space.heuristic(shape, current_gpu().facts);
}

std::string describe(const Space& space) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Known& k = known(space, current_gpu().key);
  if (!k.tuned.has_entry) return "built-in choice (" + k.source + ")";
  std::string out = k.source;
  for (const Winner& w : k.tuned.winners) {
    std::string shape;
    for (const std::string& d : space.dims) shape += (shape.empty() ? "" : " ") + d + "=" + std::to_string(w.shape[d]);
    out += "\n  near " + shape + ": " + space.name_of(w.config);
  }
  return out;
}

Facts current_facts() { return current_gpu().facts; }

Forced::Forced(const Space& space, Config c) : name_(space.name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  forced()[name_] = std::move(c);
}

Forced::~Forced() {
  std::lock_guard<std::mutex> lock(g_mutex);
  forced().erase(name_);
}

}  // namespace wb::tune
