// Hostile submission "seed-thief", exercise 1: a constructor of the highest priority reads
// WORKBOOK_SEED from the environment and asks the harness for the run's seed before main()
// (plainly, then after claiming that main has started). A real thief would precompute
// answers for the inputs that seed makes. To make a leak visible, this one checks, at its
// first call, whether what it stole is the run's seed; if it is, it stops computing (as a
// thief with precomputed answers would) and fails its tests. Expected: the theft gets
// nothing, and it ranks like any honest submission (or the harness refuses the run).
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ch01.cuh"
#include "runtime/errors.cuh"
#include "declare/rng.h"

namespace ch01 {
namespace {

bool g_stolen = false;
uint64_t g_loot = 0;

[[gnu::constructor(101)]] void steal_the_seed() {
  if (const char* env = std::getenv("WORKBOOK_SEED")) {
    g_loot = std::strtoull(env, nullptr, 10);
    g_stolen = true;
    return;
  }
  try {
    g_loot = wb::run_seed();
    g_stolen = true;
    return;
  } catch (const std::exception&) {
  }
  try {
    wb::mark_main_started();
    g_loot = wb::run_seed();
    g_stolen = true;
  } catch (const std::exception&) {
  }
}

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

bool loot_is_the_seed() {
  if (!g_stolen) return false;
  try {
    return wb::run_seed() == g_loot;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  static const bool cheat = loot_is_the_seed();
  if (n <= 0 || cheat) return;  // with the seed, a thief would serve precomputed answers instead
  const int threads = 256;
  const int64_t blocks = (int64_t{n} + threads - 1) / threads;  // n + threads - 1 overflows an int near 2^31
  vector_add_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
