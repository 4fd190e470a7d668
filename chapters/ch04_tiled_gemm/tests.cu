// Chapter 4 tests. The same file tests your kernels (preset ch04) and, built with
// WB_TEST_SOLUTIONS, the cuBLAS reference, every step of the solution ladder and every
// tile configuration the autotuner may pick (ch04-solution).
//
// Every shape runs three times: packed with beta = 0 (C holds NaN and must not be read),
// padded with beta != 0 (C must be read), and with an odd padding (rows misaligned for
// float4). A failure names the shape, the wrong (row, col), expected vs got, a map of the
// wrong tiles, and the seed.
#include <gtest/gtest.h>

#include "ch04.cuh"
#include "check.cuh"
#include "cuda/gtest_support.cuh"
#include "host/shapes.h"

namespace ch04 {
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

using Case = std::pair<Kernels, wb::Extent3>;

std::vector<Case> cases(const std::vector<Kernels>& kernels, const std::vector<wb::Extent3>& shapes) {
  std::vector<Case> out;
  for (const auto& k : kernels) {
    if (k.sgemm == nullptr) continue;
    for (const auto& s : shapes) out.emplace_back(k, s);
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.first.name + "_" + wb::label_3d(info.param.second);
}

// Runs the argument sets in order and stops at the first that fails (a stub or a kernel
// that faults would only repeat the same message).
void expect_all_pass(SgemmFn* fn, const std::vector<GemmArgs>& sets, wb::Rng& rng) {
  for (const auto& args : sets) {
    const wb::Outcome o = check_sgemm(fn, args, rng);
    WB_EXPECT_PASS(o);
    if (!o.passed()) return;
  }
}

// --- The shape catalogue: tiny, primes, one off every tile size, thin, K = 1, long K,
// --- 1024^3 and 2048^3 (sampled) --------------------------------------------------------

class Ch04Sgemm : public ::testing::TestWithParam<Case> {};

TEST_P(Ch04Sgemm, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  expect_all_pass(k.sgemm, standard_args(int(e.m), int(e.n), int(e.k)), rng);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Ch04Sgemm, ::testing::ValuesIn(cases(under_test(), wb::gemm_shapes(2048))),
                         case_name);

// --- Empty problems: M or N = 0 launches nothing; K = 0 leaves C = beta * C -------------

class Ch04SgemmEmpty : public ::testing::TestWithParam<Case> {};

TEST_P(Ch04SgemmEmpty, FollowsTheBlasRules) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  expect_all_pass(k.sgemm, standard_args(int(e.m), int(e.n), int(e.k)), rng);
}

const std::vector<wb::Extent3> kEmpty = {{0, 5, 7}, {5, 0, 7}, {0, 0, 0}, {5, 7, 0}, {130, 129, 0}};
INSTANTIATE_TEST_SUITE_P(Empty, Ch04SgemmEmpty, ::testing::ValuesIn(cases(under_test(), kEmpty)), case_name);

// --- Random shapes, drawn from the run's seed (printed at the top and on failure) --------

class Ch04RandomShapes : public ::testing::TestWithParam<Kernels> {};

TEST_P(Ch04RandomShapes, MatchFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const Kernels& k = GetParam();
  const float alphas[] = {1.0f, -0.5f, 2.0f}, betas[] = {0.0f, 1.0f, -0.25f};
  for (const auto& e : wb::random_gemm_shapes(rng, 4, 700, 700, 700)) {
    GemmArgs args{int(e.m), int(e.n), int(e.k)};
    args.pad = int(rng.range(0, 5));
    args.alpha = alphas[rng.range(0, 2)];
    args.beta = betas[rng.range(0, 2)];
    const wb::Outcome o = check_sgemm(k.sgemm, args, rng);
    WB_EXPECT_PASS(o);
    if (!o.passed()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeded, Ch04RandomShapes, ::testing::ValuesIn(under_test()),
                         [](const auto& info) { return info.param.name; });

#ifdef WB_TEST_SOLUTIONS
// --- Every configuration the autotuner may pick, on the awkward shapes ------------------
// The best solution runs whichever configuration configs/ch04_sgemm.json names for this
// GPU, so each one must be right, not only the default.

class Ch04TunedConfigs : public ::testing::TestWithParam<Case> {};

TEST_P(Ch04TunedConfigs, MatchesFloat64) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto& [k, e] = GetParam();
  expect_all_pass(k.sgemm, standard_args(int(e.m), int(e.n), int(e.k)), rng);
}

const std::vector<wb::Extent3> kConfigShapes = {{1, 1, 1},      {127, 131, 137}, {257, 255, 263},
                                                {1025, 129, 65}, {33, 2049, 96},  {256, 256, 1}};
INSTANTIATE_TEST_SUITE_P(Configs, Ch04TunedConfigs,
                         ::testing::ValuesIn(cases(tuned_config_variants(), kConfigShapes)), case_name);
#endif

}  // namespace
}  // namespace ch04
