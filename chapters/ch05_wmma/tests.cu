// Chapter 5 tests. The same file tests your kernels (preset ch05) and, built with
// WB_TEST_SOLUTIONS, the cuBLAS reference and every step of the solution ladder
// (ch05-solution). Every (kernel set, type pair, shape) is one test:
//   Shapes/Ch05Gemm.MatchesFloat64AndCublas/ex2_wmma_smem_bf16_bf16_M17_N33_K65
// A failure names the shape, the wrong coordinates, expected vs got, a tile map, a
// diagnosis where one fits, and the seed. A set that needs a newer GPU than this one
// (BF16 and cp.async: sm_80; the wgmma bonus: exactly sm_90) is skipped with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "ch05.cuh"
#include "check.cuh"
#include "cuda/device.cuh"
#include "cuda/gtest_support.cuh"
#include "host/shapes.h"

namespace ch05 {
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

// Skips (never passes) the test when this GPU cannot run the set's kernels for type pair t.
#define CH05_REQUIRE(k, t)                                                                          \
  do {                                                                                              \
    const int need_ = std::max((k).min_cc, types_min_cc(t));                                        \
    WB_REQUIRE_SM(need_ / 10, need_ % 10, (k).name + " (" + types_name(t) + ")");                   \
    if ((k).sm90a_only) {                                                                           \
      const ::wb::DeviceInfo dev_ = ::wb::query_device();                                           \
      if (!(dev_.major == 9 && dev_.minor == 0)) {                                                  \
        GTEST_SKIP() << (k).name << " needs sm_90a (Hopper): wgmma and TMA exist on compute "       \
                     << "capability 9.0 only; this GPU (" << dev_.name << ") is "                   \
                     << dev_.compute_capability();                                                  \
      }                                                                                             \
    }                                                                                               \
  } while (0)

// The shared GEMM catalogue (tiny, primes, one off every tile size in m, n and k, thin,
// k = 1, a long k, 1024^3, 2048^3 sampled) plus the edges of this chapter's tiles:
// fragments of 16, 128 x 256 block tiles, 64-deep TMA boxes, and rows whose length is a
// multiple of 16 bytes (the vector and TMA paths) without being a multiple of any tile.
std::vector<wb::Extent3> chapter_shapes() {
  auto s = wb::gemm_shapes(2048);
  const std::vector<wb::Extent3> extra = {
      {17, 33, 65},     // every dimension one past a multiple of 16
      {16, 16, 16},     // exactly one fragment
      {15, 17, 31},     // one short of a fragment in m and k
      {8, 8, 8},        // aligned rows, less than one fragment
      {128, 256, 64},   // exactly one block tile of v5 / v6
      {136, 264, 72},   // aligned rows, one past a fragment multiple of every tile
      {200, 520, 136},  // aligned rows; partial block tiles in m and n, partial K step
      {520, 776, 1032}, // aligned rows, several tiles, partial everywhere
  };
  s.insert(s.end(), extra.begin(), extra.end());
  return s;
}

struct GemmParam {
  Kernels k;
  Types t;
  wb::Extent3 e;
};
void PrintTo(const GemmParam& p, std::ostream* os) {
  *os << p.k.name << " " << types_name(p.t) << " " << wb::label_3d(p.e);
}

std::vector<GemmParam> cases(const std::vector<wb::Extent3>& shapes, const std::vector<Types>& types) {
  std::vector<GemmParam> out;
  for (const auto& k : under_test()) {
    for (Types t : types) {
      if (!has(k, t)) continue;
      for (const auto& e : shapes) out.push_back({k, t, e});
    }
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<GemmParam>& info) {
  return info.param.k.name + "_" + types_name(info.param.t) + "_" + wb::label_3d(info.param.e);
}

GemmCase gemm_case(const wb::Extent3& e, bool with_c = false) {
  return {static_cast<int>(e.m), static_cast<int>(e.n), static_cast<int>(e.k), with_c};
}

// --- every set x type pair x shape ------------------------------------------------------

class Ch05Gemm : public ::testing::TestWithParam<GemmParam> {};

TEST_P(Ch05Gemm, MatchesFloat64AndCublas) {
  const auto& [k, t, e] = GetParam();
  CH05_REQUIRE(k, t);
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_gemm(k, t, gemm_case(e), rng));
}

// One type pair per input type meets every shape: FP16 -> FP32, BF16 -> BF16, INT8 -> INT32.
// The other two output types share the same main loops (only the epilogue differs) and
// meet the shapes that exercise the edges.
const std::vector<Types> kEveryShapeTypes = {Types::F16_F32, Types::BF16_BF16, Types::I8_I32};
const std::vector<Types> kEdgeShapeTypes = {Types::F16_F16, Types::BF16_F32};
const std::vector<wb::Extent3> kEdgeShapes = {{1, 1, 1},     {15, 17, 31},    {17, 33, 65},     {257, 255, 17},
                                              {67, 129, 4097}, {136, 264, 72}, {520, 776, 1032}, {1024, 1024, 1024}};

INSTANTIATE_TEST_SUITE_P(Shapes, Ch05Gemm, ::testing::ValuesIn(cases(chapter_shapes(), kEveryShapeTypes)), case_name);
INSTANTIATE_TEST_SUITE_P(Edges, Ch05Gemm, ::testing::ValuesIn(cases(kEdgeShapes, kEdgeShapeTypes)), case_name);

// --- D = A * B + C on a few shapes ------------------------------------------------------

class Ch05GemmAddC : public ::testing::TestWithParam<GemmParam> {};

TEST_P(Ch05GemmAddC, MatchesFloat64AndCublas) {
  const auto& [k, t, e] = GetParam();
  CH05_REQUIRE(k, t);
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_gemm(k, t, gemm_case(e, true), rng));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Ch05GemmAddC,
                         ::testing::ValuesIn(cases({{1, 1, 1}, {17, 33, 65}, {136, 264, 72}, {255, 257, 263}},
                                                   all_types())),
                         case_name);

#ifdef WB_TEST_SOLUTIONS
// --- the benchmark's size, sampled (solution build only: a few seconds per set) ---------

class Ch05GemmLarge : public ::testing::TestWithParam<GemmParam> {};

TEST_P(Ch05GemmLarge, MatchesFloat64AndCublas) {
  const auto& [k, t, e] = GetParam();
  CH05_REQUIRE(k, t);
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_gemm(k, t, gemm_case(e), rng));
}

INSTANTIATE_TEST_SUITE_P(Sampled, Ch05GemmLarge,
                         ::testing::ValuesIn(cases({{4096, 4096, 4096}}, {Types::BF16_BF16})), case_name);
#endif

// --- random shapes, drawn from the run's seed (printed at the top and on failure) --------

struct SetTypes {
  Kernels k;
  Types t;
};
void PrintTo(const SetTypes& p, std::ostream* os) { *os << p.k.name << " " << types_name(p.t); }

std::vector<SetTypes> set_types() {
  std::vector<SetTypes> out;
  for (const auto& k : under_test()) {
    for (Types t : all_types()) {
      if (has(k, t)) out.push_back({k, t});
    }
  }
  return out;
}

class Ch05RandomShapes : public ::testing::TestWithParam<SetTypes> {};

TEST_P(Ch05RandomShapes, ThreeShapes) {
  const auto& [k, t] = GetParam();
  CH05_REQUIRE(k, t);
  auto rng = wb::test_rng();
  for (const auto& e : wb::random_gemm_shapes(rng, 3, 300, 300, 300)) {
    WB_EXPECT_PASS(check_gemm(k, t, gemm_case(e, rng.range(0, 1) == 1), rng));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeded, Ch05RandomShapes, ::testing::ValuesIn(set_types()),
                         [](const auto& info) { return info.param.k.name + "_" + types_name(info.param.t); });

}  // namespace
}  // namespace ch05
