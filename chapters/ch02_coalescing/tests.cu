// Chapter 2 tests. The same file tests your kernels (preset ch02) and, built with
// WB_TEST_SOLUTIONS, the reference and every step of the solution ladder (ch02-solution).
// A failure names the shape, the wrong coordinates, expected vs got, and the seed.
#include <gtest/gtest.h>

#include "ch02.cuh"
#include "check.cuh"
#include "cuda/gtest_support.cuh"
#include "host/shapes.h"

namespace ch02 {
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

// The book's shape catalogue, plus shapes for kernels that move 4-element vectors through
// 64 x 64 tiles: multiples of 4 that are not multiples of 64, and exact tiles.
std::vector<wb::Extent2> transpose_shapes() {
  auto shapes = wb::shapes_2d(2048);
  for (wb::Extent2 e : {wb::Extent2{4, 4}, {4, 8}, {8, 4}, {64, 64}, {60, 68}, {68, 196}, {132, 260}, {192, 128}}) {
    shapes.push_back(e);
  }
  return shapes;
}

const std::vector<int64_t> kSizes = wb::sizes_1d(int64_t{1} << 20);
const std::vector<wb::Extent2> kShapes = transpose_shapes();
// Strides: a plain copy, half the sectors wasted, an odd one, and one sector per element.
constexpr int kStrides[] = {1, 2, 7, 32};

// --- Exercise 1: strided copy -----------------------------------------------------------

using CopyCase = std::pair<Kernels, int64_t>;
class Ch02StridedCopy : public ::testing::TestWithParam<CopyCase> {};

TEST_P(Ch02StridedCopy, CopiesEveryStrideExactly) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, n] = GetParam();
  for (int stride : kStrides) WB_EXPECT_PASS(check_strided_copy(k.strided_copy, static_cast<int>(n), stride, rng));
}

INSTANTIATE_TEST_SUITE_P(Sizes, Ch02StridedCopy, ::testing::ValuesIn(cases(&Kernels::strided_copy, kSizes)),
                         case_name<int64_t>);

// --- Exercises 2 and 3: FP32 transpose; exercise 4: BF16 transpose ------------------------

using MatrixCase = std::pair<Kernels, wb::Extent2>;
class Ch02TransposeF32 : public ::testing::TestWithParam<MatrixCase> {};
class Ch02TransposeBF16 : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(Ch02TransposeF32, MatchesInputExactly) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  WB_EXPECT_PASS(check_transpose_f32(k.transpose_f32, static_cast<int>(e.rows), static_cast<int>(e.cols), rng));
}

TEST_P(Ch02TransposeBF16, MatchesInputExactly) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  WB_EXPECT_PASS(check_transpose_bf16(k.transpose_bf16, static_cast<int>(e.rows), static_cast<int>(e.cols), rng));
}

INSTANTIATE_TEST_SUITE_P(Matrices, Ch02TransposeF32, ::testing::ValuesIn(cases(&Kernels::transpose_f32, kShapes)),
                         case_name<wb::Extent2>);
INSTANTIATE_TEST_SUITE_P(Matrices, Ch02TransposeBF16, ::testing::ValuesIn(cases(&Kernels::transpose_bf16, kShapes)),
                         case_name<wb::Extent2>);

// --- Random shapes, drawn from the run's seed (printed at the top and on failure) --------

class Ch02RandomShapes : public ::testing::TestWithParam<Kernels> {};

TEST_P(Ch02RandomShapes, AllExercises) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const Kernels& k = GetParam();
  if (k.strided_copy) {
    for (int64_t n : wb::random_sizes_1d(rng, 4, 1 << 20)) {
      const int stride = static_cast<int>(rng.range(1, 40));
      WB_EXPECT_PASS(check_strided_copy(k.strided_copy, static_cast<int>(n), stride, rng));
    }
  }
  for (auto e : wb::random_shapes_2d(rng, 4, 3000, 3000)) {
    const int rows = static_cast<int>(e.rows), cols = static_cast<int>(e.cols);
    if (k.transpose_f32) WB_EXPECT_PASS(check_transpose_f32(k.transpose_f32, rows, cols, rng));
    if (k.transpose_bf16) WB_EXPECT_PASS(check_transpose_bf16(k.transpose_bf16, rows, cols, rng));
    // The same shape rounded to multiples of 4, where vectorized kernels take their fast path.
    const int rows4 = (rows + 3) / 4 * 4, cols4 = (cols + 3) / 4 * 4;
    if (k.transpose_f32) WB_EXPECT_PASS(check_transpose_f32(k.transpose_f32, rows4, cols4, rng));
    if (k.transpose_bf16) WB_EXPECT_PASS(check_transpose_bf16(k.transpose_bf16, rows4, cols4, rng));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeded, Ch02RandomShapes, ::testing::ValuesIn(under_test()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ch02
