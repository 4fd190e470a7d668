// Chapter 3 tests. The same file tests your kernels (preset ch03) and, built with
// WB_TEST_SOLUTIONS, the CUB reference and every step of the solution ladder (ch03-solution).
// A failure names the op and the length, expected vs got, and the seed. Every check runs
// the launcher at least twice on one input and one workspace (see check.cuh).
#include <gtest/gtest.h>

#include "ch03.cuh"
#include "check.cuh"
#include "cuda/gtest_support.cuh"
#include "host/shapes.h"

namespace ch03 {
namespace {

std::vector<Kernels> under_test() {
#ifdef WB_TEST_SOLUTIONS
  auto all = reference_variants();
  for (auto& k : solution_variants()) all.push_back(k);
  return all;
#else
  return student_variants();
#endif
}

// Lengths: empty, then the book's 1-D catalogue (tiny, primes, one off every block size,
// 2^20 + 1, 2^24 and 2^24 + 3).
std::vector<int64_t> reduce_sizes() {
  auto sizes = wb::sizes_1d(int64_t{1} << 24);
  sizes.insert(sizes.begin(), 0);
  return sizes;
}

// Row shapes: one long row, many tiny rows, rows whose starts are not 16-byte aligned,
// each side of the 64- and 4096-column switches of the solution, empty rows.
const std::vector<wb::Extent2> kRowShapes = {
    {1, 1},      {1, 3},      {2, 3},     {7, 1},      {3, 0},       {33, 65},    {1, 1000},
    {1, 1000000}, {100000, 7}, {65537, 32}, {1000, 64}, {1000, 65},   {4097, 1025}, {33, 4095},
    {5, 4096},   {3, 5003},   {257, 4100}, {2, 100003}, {1500, 8191},
};

using SizeCase = std::pair<Kernels, int64_t>;
using ShapeCase = std::pair<Kernels, wb::Extent2>;

std::vector<SizeCase> size_cases(Reduction op) {
  std::vector<SizeCase> out;
  for (const auto& k : under_test()) {
    if (!has(k, op)) continue;
    for (int64_t n : reduce_sizes()) out.emplace_back(k, n);
  }
  return out;
}

std::vector<ShapeCase> row_cases() {
  std::vector<ShapeCase> out;
  for (const auto& k : under_test()) {
    if (k.row_sum == nullptr) continue;
    for (const auto& e : kRowShapes) out.emplace_back(k, e);
  }
  return out;
}

std::string size_name(const ::testing::TestParamInfo<SizeCase>& info) {
  return info.param.first.name + "_" + wb::label_1d(info.param.second);
}
std::string shape_name(const ::testing::TestParamInfo<ShapeCase>& info) {
  return info.param.first.name + "_" + wb::label_2d(info.param.second);
}

// --- Exercise 1: FP32 sum ------------------------------------------------------------------

class Ch03SumF32 : public ::testing::TestWithParam<SizeCase> {};

TEST_P(Ch03SumF32, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, n] = GetParam();
  WB_EXPECT_PASS(check_reduce(k, Reduction::SumF32, static_cast<int>(n), rng));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Ch03SumF32, ::testing::ValuesIn(size_cases(Reduction::SumF32)), size_name);

// --- Exercise 2: FP32 max, exact, wherever the max is ----------------------------------------

class Ch03MaxF32 : public ::testing::TestWithParam<SizeCase> {};

TEST_P(Ch03MaxF32, IsExact) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, n] = GetParam();
  for (MaxAt at : {MaxAt::Last, MaxAt::First, MaxAt::Random}) {
    WB_EXPECT_PASS(check_reduce(k, Reduction::MaxF32, static_cast<int>(n), rng, 2, at));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, Ch03MaxF32, ::testing::ValuesIn(size_cases(Reduction::MaxF32)), size_name);

// --- Exercise 3: BF16 sum, FP32 accumulate ---------------------------------------------------

class Ch03SumBf16 : public ::testing::TestWithParam<SizeCase> {};

TEST_P(Ch03SumBf16, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, n] = GetParam();
  WB_EXPECT_PASS(check_reduce(k, Reduction::SumBf16, static_cast<int>(n), rng));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Ch03SumBf16, ::testing::ValuesIn(size_cases(Reduction::SumBf16)), size_name);

// --- Exercise 4: row sums --------------------------------------------------------------------

class Ch03RowSum : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(Ch03RowSum, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  WB_EXPECT_PASS(check_row_sum(k, static_cast<int>(e.rows), static_cast<int>(e.cols), rng));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Ch03RowSum, ::testing::ValuesIn(row_cases()), shape_name);

// --- Random lengths and shapes, drawn from the run's seed (printed at the top and on failure)

class Ch03RandomShapes : public ::testing::TestWithParam<Kernels> {};

TEST_P(Ch03RandomShapes, AllExercises) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const Kernels& k = GetParam();
  for (int64_t n : wb::random_sizes_1d(rng, 4, 1 << 22)) {
    for (Reduction op : {Reduction::SumF32, Reduction::MaxF32, Reduction::SumBf16}) {
      if (has(k, op)) WB_EXPECT_PASS(check_reduce(k, op, static_cast<int>(n), rng));
    }
  }
  if (k.row_sum == nullptr) return;
  auto shapes = wb::random_shapes_2d(rng, 4, 3000, 3000);
  shapes.push_back({rng.range(1, 8), rng.range(4096, 1 << 20)});  // a few long rows
  shapes.push_back({rng.range(1 << 14, 1 << 18), rng.range(1, 40)});  // many short rows
  for (const auto& e : shapes) {
    WB_EXPECT_PASS(check_row_sum(k, static_cast<int>(e.rows), static_cast<int>(e.cols), rng));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeded, Ch03RandomShapes, ::testing::ValuesIn(under_test()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ch03
