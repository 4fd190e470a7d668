// Seeded random inputs. One seed per run: WORKBOOK_SEED if set, otherwise drawn fresh and
// printed, so any failure can be repeated with `WORKBOOK_SEED=<seed> ctest ...`.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wb {

// The run's seed: WORKBOOK_SEED (decimal) if set, else random. Throws std::invalid_argument
// with a clear message when WORKBOOK_SEED is not a number.
uint64_t run_seed();
// Called first thing in main() of the test and benchmark programs. With
// WORKBOOK_SEED_MODE=secret (a ranked run) the seed is drawn only after this, and
// run_seed() refuses to answer before it.
void mark_main_started();
// "seed 1234 (repeat with WORKBOOK_SEED=1234)"
std::string seed_hint();

// Small, fast, reproducible generator (xoshiro256**, seeded through splitmix64).
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform(double lo, double hi);   // [lo, hi)
  int64_t range(int64_t lo, int64_t hi);  // [lo, hi], inclusive
 private:
  uint64_t s_[4];
};

// A generator for one named stream of the run (the run seed mixed with the name), so that
// each test's data depends on the seed and the test, not on which tests ran before it.
Rng rng_for(std::string_view stream);

// Uniform values in [lo, hi); never all zero, never a constant.
std::vector<float> random_floats(size_t n, Rng& rng, float lo = -1.0f, float hi = 1.0f);

}  // namespace wb
