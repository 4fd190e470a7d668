// Shape catalogues shared by every chapter's tests. A kernel that is right only on
// squares, powers of two or tile multiples must meet a shape here that proves it wrong.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "declare/rng.h"

namespace wb {

struct Extent2 {
  int64_t rows, cols;
};
// How test frameworks print an Extent2 ("257x4099").
inline void PrintTo(const Extent2& e, std::ostream* os) { *os << e.rows << "x" << e.cols; }

// Tiny (1, 2, 3), primes, one off every power-of-two tile size, and two large sizes.
std::vector<int64_t> sizes_1d(int64_t large = int64_t{1} << 24);
// Tiny, thin (1 x N, N x 1), primes, one off tile sizes, tall, wide, square, large.
std::vector<Extent2> shapes_2d(int64_t large = 2048);
// `count` sizes drawn from `rng` in [1, max] (reproducible from the run seed).
std::vector<int64_t> random_sizes_1d(Rng& rng, int count, int64_t max);
std::vector<Extent2> random_shapes_2d(Rng& rng, int count, int64_t max_rows, int64_t max_cols);

// Test-name fragments: "n1025", "M257_N4099" style.
std::string label_1d(int64_t n);
std::string label_2d(const Extent2& e, const char* row = "rows", const char* col = "cols");

// GEMM problem sizes: C (m x n) = A (m x k) * B (k x n).
struct Extent3 {
  int64_t m, n, k;
};
// How test frameworks print an Extent3 ("1025x512x63", m x n x k).
inline void PrintTo(const Extent3& e, std::ostream* os) { *os << e.m << "x" << e.n << "x" << e.k; }

// Tiny, primes, one off every power-of-two tile size in each of m, n and k, a single row
// and a single column, tall and wide, k = 1, a long k (4097), a 1024 cube and a
// `large` cube (compare it on a sample).
std::vector<Extent3> gemm_shapes(int64_t large = 2048);
// `count` shapes drawn from `rng`, each dimension in [1, max] (reproducible from the run seed).
std::vector<Extent3> random_gemm_shapes(Rng& rng, int count, int64_t max_m, int64_t max_n, int64_t max_k);
// "M1025_N512_K63"
std::string label_3d(const Extent3& e);

}  // namespace wb
