#include "host/shapes.h"

namespace wb {

std::vector<int64_t> sizes_1d(int64_t large) {
  return {
      1, 2, 3,                          // tiny: one block, mostly idle
      31, 127, 8191, 131071,            // primes
      255, 257, 1023, 1025, 4097,       // one off the usual block and tile sizes
      (int64_t{1} << 20) + 1,           // a tail of one element after a round size
      large, large + 3,                 // large, and large with a ragged tail
  };
}

std::vector<Extent2> shapes_2d(int64_t large) {
  return {
      {1, 1}, {2, 3}, {3, 2},                  // tiny
      {1, 1000}, {1000, 1},                    // one row, one column
      {7, 13}, {31, 127}, {127, 31},           // primes, both orientations
      {33, 65}, {65, 33},                      // one past 32 and 64
      {255, 257}, {257, 255},                  // one off 256
      {1025, 17}, {17, 1025},                  // tall and thin, wide and flat
      {100, 1000}, {1000, 100},                // 10:1 rectangles
      {512, 512}, {1000, 1000},                // squares, round and not
      {large, large + 1}, {large + 1, large / 2 - 3},  // large rectangles
  };
}

std::vector<int64_t> random_sizes_1d(Rng& rng, int count, int64_t max) {
  std::vector<int64_t> out;
  for (int i = 0; i < count; ++i) out.push_back(rng.range(1, max));
  return out;
}

std::vector<Extent2> random_shapes_2d(Rng& rng, int count, int64_t max_rows, int64_t max_cols) {
  std::vector<Extent2> out;
  for (int i = 0; i < count; ++i) out.push_back({rng.range(1, max_rows), rng.range(1, max_cols)});
  return out;
}

std::string label_1d(int64_t n) { return "n" + std::to_string(n); }

std::string label_2d(const Extent2& e, const char* row, const char* col) {
  return std::string(row) + std::to_string(e.rows) + "_" + col + std::to_string(e.cols);
}

}  // namespace wb
