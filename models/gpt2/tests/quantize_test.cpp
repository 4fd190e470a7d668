// The per-row INT8 quantizer of --int8 (quantize.h): the round trip within half a step, the
// exact values of a matrix worked by hand, zero rows, an outlier, BF16 tensors, and the
// inputs it must refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "quantize.h"
#include "test_files.h"

namespace gpt2::test {
namespace {

// |W - q * scale| <= scale / 2 for every element (in double: the bound is about the
// quantizer, not about FP32's rounding of the product), q in [-127, 127], scale > 0.
void expect_round_trip(const std::vector<float>& w, const QuantizedMatrix& m) {
  ASSERT_EQ(m.q.size(), w.size());
  ASSERT_EQ(m.scale.size(), size_t(m.rows));
  int reported = 0;
  for (int64_t n = 0; n < m.rows; ++n) {
    const double s = m.scale[size_t(n)];
    EXPECT_GT(s, 0.0) << "row " << n;
    for (int64_t k = 0; k < m.cols; ++k) {
      const size_t i = size_t(n * m.cols + k);
      EXPECT_GE(m.q[i], -127) << "row " << n << " col " << k << ": -128 is not used";
      const double err = std::fabs(double(w[i]) - double(m.q[i]) * s);
      if (err > 0.5 * s * (1 + 1e-12) && reported++ < 5) {
        ADD_FAILURE() << "row " << n << " col " << k << ": W = " << w[i] << ", q = " << int(m.q[i]) << ", scale = " << s
                      << ": error " << err << " > scale / 2";
      }
    }
  }
}

TEST(Quantize, HandMadeTwoByFour) {
  // Row 0: max |W| = 1.27, scale 0.01:  0.5 -> 50, -1.27 -> -127, 0.127 -> 12.7 -> 13, 0 -> 0.
  // Row 1: max |W| = 3.81, scale 0.03: -3.81 -> -127, 1 -> 33.3 -> 33, 0 -> 0, 2.54 -> 84.7 -> 85.
  const std::vector<float> w = {0.5f,   -1.27f, 0.127f, 0.0f,  //
                                -3.81f, 1.0f,   0.0f,   2.54f};
  const QuantizedMatrix m = quantize_rows(w.data(), 2, 4, "hand-made");
  EXPECT_EQ(m.rows, 2);
  EXPECT_EQ(m.cols, 4);
  EXPECT_EQ(m.q, (std::vector<int8_t>{50, -127, 13, 0, -127, 33, 0, 85}));
  EXPECT_FLOAT_EQ(m.scale[0], 0.01f);
  EXPECT_FLOAT_EQ(m.scale[1], 0.03f);
  EXPECT_EQ(m.scale[0], 1.27f / 127.0f) << "the scale is max / 127 computed in FP32";
  EXPECT_EQ(m.bytes(), 8u + 2u * sizeof(float));
  expect_round_trip(w, m);
}

TEST(Quantize, RoundTripWithinHalfAStep) {
  const uint64_t seed = 20240611;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  // GPT-2's weights are about N(0, 0.02^2); odd sizes on purpose.
  for (auto [N, K] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {17, 769}, {64, 1600}}) {
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w(size_t(N * K));
    for (float& v : w) v = normal(rng);
    SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K));
    const QuantizedMatrix m = quantize_rows(w.data(), N, K);
    expect_round_trip(w, m);
    for (int64_t n = 0; n < N; ++n) {
      // The row's largest magnitude lands on +-127 exactly.
      int amax = 0;
      for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::abs(int(m.q[size_t(n * K + k)])));
      EXPECT_EQ(amax, 127) << "row " << n;
    }
  }
}

TEST(Quantize, LargeMatrixOnManyCoresMatchesRowByRow) {
  // Above the size where the rows are shared out to threads: each row as if quantized alone.
  const int64_t N = 1031, K = 4099;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(size_t(N * K));
  for (float& v : w) v = u(rng);
  const QuantizedMatrix all = quantize_rows(w.data(), N, K);
  expect_round_trip(w, all);
  for (int64_t n : {int64_t{0}, int64_t{1}, N / 2, N - 1}) {
    const QuantizedMatrix one = quantize_rows(w.data() + n * K, 1, K);
    EXPECT_EQ(one.scale[0], all.scale[size_t(n)]) << "row " << n;
    EXPECT_TRUE(std::equal(one.q.begin(), one.q.end(), all.q.begin() + n * K)) << "row " << n;
  }
}

TEST(Quantize, ZeroRowGetsScaleOneAndZeros) {
  const std::vector<float> w = {0, 0,     0, 0,  0,  //
                                1, -2,    3, -4, 5,  //
                                0, -0.0f, 0, 0,  0};
  const QuantizedMatrix m = quantize_rows(w.data(), 3, 5);
  EXPECT_EQ(m.scale[0], 1.0f);
  EXPECT_EQ(m.scale[2], 1.0f);
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(m.q[size_t(k)], 0);
    EXPECT_EQ(m.q[size_t(10 + k)], 0);
  }
  EXPECT_FLOAT_EQ(m.scale[1], 5.0f / 127.0f);
  expect_round_trip(w, m);
}

TEST(Quantize, RowTooSmallForAnFp32ScaleIsStoredAsZeros) {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<float> w = {tiny, -2 * tiny, 0, tiny};
  const QuantizedMatrix m = quantize_rows(w.data(), 1, 4);
  EXPECT_EQ(m.scale[0], 1.0f) << "max / 127 rounds to 0 in FP32";
  EXPECT_EQ(m.q, (std::vector<int8_t>{0, 0, 0, 0}));
  expect_round_trip(w, m);
}

TEST(Quantize, OneLargeOutlierSetsTheRowsScale) {
  // One weight 1000x the others: it takes +-127, the small ones round to a few steps or to 0,
  // and every error is still within half of the (now coarse) step.
  std::vector<float> w(64);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.01f * float(int(k % 7) - 3);  // -0.03 .. 0.03
  w[17] = -30.0f;
  const QuantizedMatrix m = quantize_rows(w.data(), 1, 64);
  EXPECT_FLOAT_EQ(m.scale[0], 30.0f / 127.0f);
  EXPECT_EQ(m.q[17], -127);
  for (size_t k = 0; k < w.size(); ++k) {
    if (k != 17) {
      EXPECT_EQ(m.q[k], 0) << "|0.03| < scale / 2 = 0.118: rounds to 0 (col " << k << ")";
    }
  }
  expect_round_trip(w, m);
}

TEST(Quantize, Bf16TensorSameAsItsFp32Values) {
  Tensor t;
  t.shape = {3, 10};
  t.dtype = wb::DType::BF16;
  std::vector<float> as_float;
  for (int i = 0; i < 30; ++i) {
    t.bf16.push_back(wb::float_to_bf16(0.37f * float(i % 11) - 1.5f));
    as_float.push_back(wb::bf16_to_float(t.bf16.back()));
  }
  const QuantizedMatrix a = quantize_rows(t, "bf16 tensor");
  const QuantizedMatrix b = quantize_rows(as_float.data(), 3, 10);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.scale, b.scale);
  expect_round_trip(as_float, a);
  EXPECT_FLOAT_EQ(a.dequantized(0, 0), float(a.q[0]) * a.scale[0]);
}

TEST(Quantize, RefusesNonFiniteWeightsNamingTensorAndRow) {
  std::vector<float> w(12, 0.5f);
  w[9] = std::numeric_limits<float>::quiet_NaN();  // row 2 of 3
  expect_error<QuantizeError>([&] { quantize_rows(w.data(), 3, 4, "h.5.mlp.c_fc.weight"); },
                              {"h.5.mlp.c_fc.weight", "row 2 of 3", "NaN", "without --int8"});
  w[9] = 0.5f;
  w[1] = -std::numeric_limits<float>::infinity();  // row 0
  expect_error<QuantizeError>([&] { quantize_rows(w.data(), 3, 4, "w"); }, {"row 0 of 3", "infinity"});
}

TEST(Quantize, RefusesWhatIsNotAMatrix) {
  Tensor v;
  v.shape = {8};
  v.dtype = wb::DType::F32;
  v.f32.assign(8, 1.0f);
  expect_error<QuantizeError>([&] { quantize_rows(v, "ln_1.weight"); }, {"ln_1.weight", "2-D", "1 dimensions"});
  expect_error<QuantizeError>([&] { quantize_rows(v.f32.data(), 0, 8, "empty"); }, {"empty", "0 x 8"});
}

}  // namespace
}  // namespace gpt2::test
