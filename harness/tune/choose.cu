// Which config a tunable launcher runs (harness/tune/tune.h): the one the autotuner is
// trying right now, else this GPU's tuned winner nearest the shape (configs/<space>.json),
// else the space's heuristic.
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

// The winners of a space on this GPU, read once per program.
const std::vector<Winner>& winners(const Space& space, const std::string& key) {
  static std::map<std::string, std::vector<Winner>> cache;
  auto it = cache.find(space.name);
  if (it != cache.end()) return it->second;
  std::vector<Winner> w;
  const std::string path = config_path(std::getenv("WORKBOOK_CONFIG_DIR"), WB_CONFIG_DIR, space.name);
  std::ifstream in(path);
  if (in && !key.empty()) {
    std::stringstream text;
    text << in.rdbuf();
    try {
      w = read_winners(text.str(), path, key, space);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kernel-workbook: %s; using the built-in choice instead\n", e.what());
    }
  }
  return cache.emplace(space.name, std::move(w)).first->second;
}

}  // namespace

Config choose(const Space& space, const Shape& shape) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = forced().find(space.name); it != forced().end()) return it->second;
  if (auto c = nearest(space, winners(space, current_gpu().key), shape)) {
    if (!space.problem || !space.problem(*c, shape)) return *c;
  }
  return space.heuristic(shape, current_gpu().facts);
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
