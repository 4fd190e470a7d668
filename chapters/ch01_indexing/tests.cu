// Chapter 1 tests. The same file tests your kernels (preset ch01) and, built with
// WB_TEST_SOLUTIONS, the reference and every step of the solution ladder (ch01-solution).
// A failure names the shape, the wrong coordinates, expected vs got, and the seed.
#include <gtest/gtest.h>

#include "ch01.cuh"
#include "check.cuh"
#include "cuda/gtest_support.cuh"
#include "host/shapes.h"

namespace ch01 {
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

// (kernel set, shape) pairs for every set that has the exercise `field`.
template <class Shape, class Field>
std::vector<std::pair<Kernels, Shape>> cases(Field field, const std::vector<Shape>& shapes) {
  std::vector<std::pair<Kernels, Shape>> out;
  for (const auto& k : under_test()) {
    if (k.*field == nullptr) continue;
    for (const auto& s : shapes) out.emplace_back(k, s);
  }
  return out;
}

template <class Shape>
std::string case_name(const ::testing::TestParamInfo<std::pair<Kernels, Shape>>& info) {
  if constexpr (std::is_same_v<Shape, int64_t>) {
    return info.param.first.name + "_" + wb::label_1d(info.param.second);
  } else {
    return info.param.first.name + "_" + wb::label_2d(info.param.second);
  }
}

const std::vector<int64_t> kSizes = wb::sizes_1d(int64_t{1} << 24);
const std::vector<wb::Extent2> kShapes = wb::shapes_2d(2048);

// --- Exercise 1 and 2: vector add ------------------------------------------------------

using VectorCase = std::pair<Kernels, int64_t>;
class Ch01VectorAdd : public ::testing::TestWithParam<VectorCase> {};
class Ch01VectorAddX2 : public ::testing::TestWithParam<VectorCase> {};

TEST_P(Ch01VectorAdd, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, n] = GetParam();
  WB_EXPECT_PASS(check_vector_add(k.vector_add, static_cast<int>(n), rng));
}

TEST_P(Ch01VectorAddX2, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, n] = GetParam();
  WB_EXPECT_PASS(check_vector_add(k.vector_add_x2, static_cast<int>(n), rng, "vector_add_x2"));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Ch01VectorAdd, ::testing::ValuesIn(cases(&Kernels::vector_add, kSizes)),
                         case_name<int64_t>);
INSTANTIATE_TEST_SUITE_P(Sizes, Ch01VectorAddX2, ::testing::ValuesIn(cases(&Kernels::vector_add_x2, kSizes)),
                         case_name<int64_t>);

// --- Exercise 3: RGB to grey ------------------------------------------------------------

using ImageCase = std::pair<Kernels, wb::Extent2>;
class Ch01RgbToGrey : public ::testing::TestWithParam<ImageCase> {};

TEST_P(Ch01RgbToGrey, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  const int height = static_cast<int>(e.rows), width = static_cast<int>(e.cols);
  WB_EXPECT_PASS(check_rgb_to_grey(k.rgb_to_grey, height, width, width, rng));      // packed rows
  WB_EXPECT_PASS(check_rgb_to_grey(k.rgb_to_grey, height, width, width + 5, rng));  // padded rows
}

INSTANTIATE_TEST_SUITE_P(Images, Ch01RgbToGrey, ::testing::ValuesIn(cases(&Kernels::rgb_to_grey, kShapes)),
                         case_name<wb::Extent2>);

// --- Exercise 4: matrix add -------------------------------------------------------------

using MatrixCase = std::pair<Kernels, wb::Extent2>;
class Ch01MatrixAdd : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(Ch01MatrixAdd, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  const int rows = static_cast<int>(e.rows), cols = static_cast<int>(e.cols);
  WB_EXPECT_PASS(check_matrix_add(k.matrix_add, rows, cols, 0, rng));  // packed
  WB_EXPECT_PASS(check_matrix_add(k.matrix_add, rows, cols, 3, rng));  // lda, ldb, ldc all different
}

INSTANTIATE_TEST_SUITE_P(Matrices, Ch01MatrixAdd, ::testing::ValuesIn(cases(&Kernels::matrix_add, kShapes)),
                         case_name<wb::Extent2>);

// --- Random shapes, drawn from the run's seed (printed at the top and on failure) --------

class Ch01RandomShapes : public ::testing::TestWithParam<Kernels> {};

TEST_P(Ch01RandomShapes, AllExercises) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const Kernels& k = GetParam();
  for (int64_t n : wb::random_sizes_1d(rng, 4, 1 << 22)) {
    if (k.vector_add) WB_EXPECT_PASS(check_vector_add(k.vector_add, static_cast<int>(n), rng));
    if (k.vector_add_x2) WB_EXPECT_PASS(check_vector_add(k.vector_add_x2, static_cast<int>(n), rng, "vector_add_x2"));
  }
  for (const auto& e : wb::random_shapes_2d(rng, 4, 1500, 1500)) {
    const int rows = static_cast<int>(e.rows), cols = static_cast<int>(e.cols);
    if (k.rgb_to_grey) WB_EXPECT_PASS(check_rgb_to_grey(k.rgb_to_grey, rows, cols, cols + 1, rng));
    if (k.matrix_add) WB_EXPECT_PASS(check_matrix_add(k.matrix_add, rows, cols, 1, rng));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeded, Ch01RandomShapes, ::testing::ValuesIn(under_test()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ch01
