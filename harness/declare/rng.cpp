#include "declare/rng.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

namespace wb {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// WORKBOOK_SEED is taken out of the environment the first time it is needed, and in any
// case before main() (the constructor below runs ahead of the default-priority static
// constructors): its value is copied, the characters in the environment block are
// overwritten (so /proc/self/environ no longer shows it), and the variable is removed.
// Code that runs later in the process -- a learner's launcher -- cannot getenv() it. This
// does not hide it from code that reads the process's memory: see docs/leaderboard.md.
struct SeedText {
  bool present = false;
  std::string text;
};

bool g_secret_mode = false;
bool g_main_started = false;

const SeedText& seed_from_environment() {
  static const SeedText taken = [] {
    SeedText t;
    if (char* mode = std::getenv("WORKBOOK_SEED_MODE")) {
      g_secret_mode = std::string(mode) == "secret";
      std::memset(mode, ' ', std::strlen(mode));
      ::unsetenv("WORKBOOK_SEED_MODE");
    }
    if (char* env = std::getenv("WORKBOOK_SEED")) {
      t.present = true;
      t.text = env;
      std::memset(env, ' ', std::strlen(env));
      ::unsetenv("WORKBOOK_SEED");
    }
    return t;
  }();
  return taken;
}

[[gnu::constructor(101)]] void take_seed_before_main() { seed_from_environment(); }

uint64_t read_seed() {
  const SeedText& taken = seed_from_environment();
  if (g_secret_mode) {
    // A ranked run: the seed is drawn here, after main has started, from fresh entropy, so
    // nothing that runs before main (a static constructor of a submission) can know it.
    if (!g_main_started) throw std::logic_error("the run's seed was asked for before main(): refused in a ranked run");
    std::random_device rd;
    return (uint64_t{rd()} << 32 | rd()) % 1000000000ull;
  }
  const char* env = taken.present ? taken.text.c_str() : nullptr;
  if (env == nullptr || *env == '\0') {
    std::random_device rd;
    return (uint64_t{rd()} << 32 | rd()) % 1000000000ull;  // short enough to retype
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || end == env || *end != '\0' || env[0] == '-') {
    throw std::invalid_argument(std::string("WORKBOOK_SEED='") + env +
                                "' is not a seed: use a non-negative decimal integer, e.g. WORKBOOK_SEED=42");
  }
  return v;
}

}  // namespace

void mark_main_started() {
  // Called once, by the harness's main(). A second call means something called it before
  // main (to read the seed of a ranked run early): the run is void.
  if (g_main_started) {
    std::fprintf(stderr, "kernel-workbook: the harness's start was announced twice (before main): this run is void\n");
    std::_Exit(3);
  }
  g_main_started = true;
}

uint64_t run_seed() {
  static const uint64_t seed = read_seed();
  return seed;
}

std::string seed_hint() {
  const std::string s = std::to_string(run_seed());
  return "seed " + s + " (repeat with WORKBOOK_SEED=" + s + ")";
}

Rng::Rng(uint64_t seed) {
  for (auto& word : s_) word = splitmix64(seed);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }

int64_t Rng::range(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(span == 0 ? next() : next() % span);
}

Rng rng_for(std::string_view stream) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the stream name
  for (char c : stream) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return Rng(run_seed() ^ h);
}

std::vector<float> random_floats(size_t n, Rng& rng, float lo, float hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

}  // namespace wb
