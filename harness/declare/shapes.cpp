#include "declare/shapes.h"

namespace wb {

std::vector<int64_t> sizes_1d(int64_t large) {
  return {
      1,
      2,
      3,  // tiny: one block, mostly idle
      31,
      127,
      8191,
      131071,  // primes
      255,
      257,
      1023,
      1025,
      4097,                    // one off the usual block and tile sizes
      (int64_t{1} << 20) + 1,  // a tail of one element after a round size
      large,
      large + 3,  // large, and large with a ragged tail
  };
}

std::vector<Extent2> shapes_2d(int64_t large) {
  return {
      {1, 1},
      {2, 3},
      {3, 2},  // tiny
      {1, 1000},
      {1000, 1},  // one row, one column
      {7, 13},
      {31, 127},
      {127, 31},  // primes, both orientations
      {33, 65},
      {65, 33},  // one past 32 and 64
      {255, 257},
      {257, 255},  // one off 256
      {1025, 17},
      {17, 1025},  // tall and thin, wide and flat
      {100, 1000},
      {1000, 100},  // 10:1 rectangles
      {512, 512},
      {1000, 1000},  // squares, round and not
      {large, large + 1},
      {large + 1, large / 2 - 3},  // large rectangles
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

std::vector<Extent3> gemm_shapes(int64_t large) {
  return {
      {1, 1, 1},
      {2, 3, 5},
      {3, 5, 2},  // tiny: one partial tile everywhere
      {1, 257, 129},
      {257, 1, 129},  // a single row of C, a single column
      {31, 37, 41},
      {127, 131, 137},  // primes
      {129, 129, 129},
      {257, 255, 17},
      {255, 257, 263},  // one off 128 and 256, in every dimension
      {1025, 129, 65},
      {65, 1025, 257},  // one past 1024, 128, 64 and 256
      {2049, 33, 96},
      {33, 2049, 96},  // tall and thin, wide and flat
      {256, 256, 1},
      {131, 67, 1},           // k = 1: a single outer product
      {67, 129, 4097},        // a long k with a ragged tail
      {1024, 1024, 1024},     // square, round
      {large, large, large},  // large (sampled)
  };
}

std::vector<Extent3> random_gemm_shapes(Rng& rng, int count, int64_t max_m, int64_t max_n, int64_t max_k) {
  std::vector<Extent3> out;
  for (int i = 0; i < count; ++i) out.push_back({rng.range(1, max_m), rng.range(1, max_n), rng.range(1, max_k)});
  return out;
}

std::string label_3d(const Extent3& e) {
  return "M" + std::to_string(e.m) + "_N" + std::to_string(e.n) + "_K" + std::to_string(e.k);
}

}  // namespace wb
