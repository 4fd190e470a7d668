// v8's tunable space as the solution runs it: the host side (tune/sgemm_config.cpp) plus what
// only this GPU can say: whether a configuration's shared memory and threads fit, and each
// kernel's registers and spill bytes (recorded in the sweep). The autotuner (ch04_tune,
// harness/tune/tune_main.cpp) sweeps it; v8_double_buffering chooses from it.
#include <map>
#include <mutex>

#include "ladder.cuh"

namespace ch04::solution {
namespace {

std::vector<SgemmConfig> compiled() {
  std::vector<SgemmConfig> out;
  for (const V8Entry& e : v8_registry()) out.push_back(e.config);
  return out;
}

struct Limits {
  cudaFuncAttributes attr{};
  int smem_optin = 0;
};

// The kernel's attributes on the current GPU, asked once per configuration (choose() asks
// for every launch).
const Limits* limits_of(const SgemmConfig& c) {
  static std::mutex m;
  static std::map<std::string, Limits> cache;
  std::lock_guard<std::mutex> lock(m);
  const std::string key = c.name();
  if (auto it = cache.find(key); it != cache.end()) return &it->second;
  for (const V8Entry& e : v8_registry()) {
    if (!(e.config == c)) continue;
    Limits l;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaFuncGetAttributes(&l.attr, e.kernel) != cudaSuccess ||
        cudaDeviceGetAttribute(&l.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;  // no GPU: nothing to add
    }
    return &cache.emplace(key, l).first->second;
  }
  return nullptr;
}

}  // namespace

const wb::tune::Space& v8_space() {
  static const wb::tune::Space space = [] {
    wb::tune::Space s = sgemm_space(compiled());
    s.problem = [host = s.problem](const wb::tune::Config& p, const wb::Shape& shape) -> std::optional<std::string> {
      if (auto why = host(p, shape)) return why;
      const SgemmConfig c = from_tune(p);
      const Limits* l = limits_of(c);
      if (l == nullptr) return std::nullopt;
      if (sgemm_smem_bytes(c) > l->smem_optin) {
        return "needs " + std::to_string(sgemm_smem_bytes(c)) + " bytes of shared memory per block; this GPU allows " +
               std::to_string(l->smem_optin);
      }
      if (l->attr.maxThreadsPerBlock < c.threads) {
        return "needs " + std::to_string(l->attr.numRegs) + " registers per thread: at most " +
               std::to_string(l->attr.maxThreadsPerBlock) + " threads per block fit, not " + std::to_string(c.threads);
      }
      return std::nullopt;
    };
    s.facts = [](const wb::tune::Config& p) -> std::vector<std::pair<std::string, int64_t>> {
      const Limits* l = limits_of(from_tune(p));
      if (l == nullptr) return {};
      return {{"registers", l->attr.numRegs}, {"spill_bytes", static_cast<int64_t>(l->attr.localSizeBytes)}};
    };
    return s;
  }();
  return space;
}

}  // namespace ch04::solution
