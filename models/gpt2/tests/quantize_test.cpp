// The quantizers of quantize.h. INT8 per row (--int8): the round trip within half a step, the
// exact values of a matrix worked by hand, zero rows, an outlier, BF16 tensors, and the
// inputs it must refuse. INT4 per group of 128 (--int4): the same, each zero point applied
// to its own group, a row's shorter last group, and the packed layout the GEMV reads.
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

// `count` values uniform in [-1, 1), from `seed` (a large matrix's weights).
std::vector<float> uniform_values(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(count));
  for (float& v : w) v = u(rng);
  return w;
}

// A BF16 tensor [rows, cols] of value(i) rounded to BF16 (i in row-major order); `as_float`
// gets the same values as FP32 (filled before the tensor is returned).
Tensor bf16_matrix(int64_t rows, int64_t cols, std::vector<float>& as_float, float (*value)(int)) {
  Tensor t;
  t.shape = {rows, cols};
  t.dtype = wb::DType::BF16;
  for (int i = 0; i < int(rows * cols); ++i) {
    t.bf16.push_back(wb::float_to_bf16(value(i)));
    as_float.push_back(wb::bf16_to_float(t.bf16.back()));
  }
  return t;
}

// An FP32 vector [n] of ones: a tensor that is not a matrix.
Tensor f32_ones(int64_t n) {
  Tensor v;
  v.shape = {n};
  v.dtype = wb::DType::F32;
  v.f32.assign(size_t(n), 1.0f);
  return v;
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
  const std::vector<float> w = uniform_values(N * K, 5);
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
  std::vector<float> as_float;
  const QuantizedMatrix a =
      quantize_rows(bf16_matrix(3, 10, as_float, [](int i) { return 0.37f * float(i % 11) - 1.5f; }), "bf16 tensor");
  EXPECT_FLOAT_EQ(a.dequantized(0, 0), float(a.q[0]) * a.scale[0]);
  const QuantizedMatrix b = quantize_rows(as_float.data(), 3, 10);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.scale, b.scale);
  expect_round_trip(as_float, a);
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
  const Tensor v = f32_ones(8);
  expect_error<QuantizeError>([&] { quantize_rows(v, "ln_1.weight"); }, {"ln_1.weight", "2-D", "1 dimensions"});
  expect_error<QuantizeError>([&] { quantize_rows(v.f32.data(), 0, 8, "empty"); }, {"empty", "0 x 8"});
}

// --- INT4, group-wise ---------------------------------------------------------------------

// |W - (q - zero) * scale| <= scale / 2 for every element, with the scale and zero of the
// element's own group g = k / 128 (float64: the bound is about the quantizer); codes and zero
// points in [0, 15], scales > 0. Returns the largest error over scale / 2 (at most 1).
double expect_int4_round_trip(const std::vector<float>& w, const Int4Matrix& m) {
  EXPECT_EQ(m.packed.size(), w.size() / 2);
  const int64_t G = m.groups();
  EXPECT_EQ(m.scale.size(), size_t(m.rows * G));
  EXPECT_EQ(m.zero.size(), size_t(m.rows * G));
  int reported = 0;
  double worst = 0;
  for (int64_t n = 0; n < m.rows; ++n) {
    for (int64_t g = 0; g < G; ++g) {
      EXPECT_GT(m.scale[size_t(n * G + g)], 0.0f) << "row " << n << " group " << g;
      EXPECT_LE(m.zero[size_t(n * G + g)], 15) << "row " << n << " group " << g;
    }
    for (int64_t k = 0; k < m.cols; ++k) {
      const size_t i = size_t(n * m.cols + k), g = size_t(n * G + k / kInt4Group);
      const double s = m.scale[g], z = m.zero[g], q = m.code(n, k);
      const double err = std::fabs(double(w[i]) - (q - z) * s);
      EXPECT_DOUBLE_EQ(m.dequantized(n, k), (q - z) * s);
      worst = std::max(worst, err / (0.5 * s));
      if (err > 0.5 * s * (1 + 1e-12) && reported++ < 5) {
        ADD_FAILURE() << "row " << n << " col " << k << " (group " << k / kInt4Group << "): W = " << w[i]
                      << ", q = " << q << ", zero = " << z << ", scale = " << s << ": error " << err << " > scale / 2";
      }
    }
  }
  return worst;
}

TEST(QuantizeInt4, LayoutPutsEachWordsLowNibblesFirst) {
  // Row n of K = 64: 32 bytes; piece 1 (k = 32 .. 63) starts at byte 16 of the row; word j of a
  // piece holds k0 = 8j .. 8j + 7 of it; byte b of the word: low nibble k0 + b, high k0 + 4 + b.
  EXPECT_EQ(int4_nibble(0, 0, 64).byte, 0u);
  EXPECT_EQ(int4_nibble(0, 0, 64).shift, 0);
  EXPECT_EQ(int4_nibble(0, 4, 64).byte, 0u);
  EXPECT_EQ(int4_nibble(0, 4, 64).shift, 4);
  EXPECT_EQ(int4_nibble(0, 1, 64).byte, 1u);
  EXPECT_EQ(int4_nibble(0, 7, 64).byte, 3u);
  EXPECT_EQ(int4_nibble(0, 7, 64).shift, 4);
  EXPECT_EQ(int4_nibble(0, 8, 64).byte, 4u);  // word 1
  EXPECT_EQ(int4_nibble(0, 31, 64).byte, 15u);
  EXPECT_EQ(int4_nibble(0, 32, 64).byte, 16u);  // piece 1
  EXPECT_EQ(int4_nibble(3, 37, 64).byte, 3u * 32 + 16 + 1);
  EXPECT_EQ(int4_nibble(3, 37, 64).shift, 4);
  // Every nibble of a 2 x 96 matrix is used exactly once.
  std::vector<int> seen(2 * 96, 0);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t k = 0; k < 96; ++k) {
      const NibbleAt at = int4_nibble(n, k, 96);
      ASSERT_LT(at.byte, 96u);
      ++seen[at.byte * 2 + size_t(at.shift / 4)];
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "nibble " << i;
}

TEST(QuantizeInt4, HandMadeGroupOf32) {
  // One row of 32 (a single, short group): w = (k - 5) / 10, k = 0 .. 31, from -0.5 to 2.6.
  // lo = -0.5, hi = 2.6: scale = 3.1 / 15, zero = round(0.5 / scale) = round(2.419) = 2.
  std::vector<float> w(32);
  for (int k = 0; k < 32; ++k) w[size_t(k)] = float(k - 5) / 10.0f;
  const Int4Matrix m = quantize_int4(w.data(), 1, 32, "hand-made");
  EXPECT_EQ(m.groups(), 1);
  EXPECT_EQ(m.zero[0], 2);
  const double s = m.scale[0];
  EXPECT_NEAR(s, (2.6 - -0.5) / 15.0, 1e-7);
  EXPECT_GE(s * 15.0, double(w[31]) - double(w[0])) << "15 scale covers the range";
  EXPECT_EQ(m.code(0, 0), 0) << "-0.5 / scale + 2 = -0.42 -> 0";
  EXPECT_EQ(m.code(0, 5), 2) << "0 is the zero point exactly";
  EXPECT_EQ(m.code(0, 31), 15) << "2.6 / scale + 2 = 14.58 -> 15";
  // The packed bytes of word 0 (k = 0 .. 7): byte b = code(b) | code(4 + b) << 4.
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(m.packed[size_t(b)], uint8_t(m.code(0, b) | (m.code(0, 4 + b) << 4))) << "byte " << b;
  }
  EXPECT_EQ(m.bytes(), 16u + 4u + 1u);
  expect_int4_round_trip(w, m);
}

TEST(QuantizeInt4, RoundTripWithinHalfAStep) {
  const uint64_t seed = 20250301;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  // GPT-2's weights are about N(0, 0.02^2); K: one short group, whole groups and a short last
  // one (GPT-2 1.5B's 1600 = 12 x 128 + 64), 6400 = 50 x 128.
  for (auto [N, K] : {std::pair<int64_t, int64_t>{1, 32}, {3, 160}, {5, 768}, {17, 1600}, {9, 6400}}) {
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w(size_t(N * K));
    for (float& v : w) v = normal(rng);
    SCOPED_TRACE("N=" + std::to_string(N) + " K=" + std::to_string(K));
    const Int4Matrix m = quantize_int4(w.data(), N, K);
    EXPECT_EQ(m.groups(), (K + 127) / 128);
    const double worst = expect_int4_round_trip(w, m);
    EXPECT_GT(worst, 0.5) << "some element is rounded by more than a quarter step: the bound is not vacuous";
  }
}

TEST(QuantizeInt4, ZeroPointAppliedToItsOwnGroup) {
  // One row, three groups: all positive (zero 0), all negative (zero 15), both signs (between).
  const int64_t K = 3 * 128;
  std::vector<float> w(static_cast<size_t>(K));
  for (int64_t k = 0; k < 128; ++k) w[size_t(k)] = 0.01f + 0.001f * float(k % 50);
  for (int64_t k = 128; k < 256; ++k) w[size_t(k)] = -0.02f - 0.002f * float(k % 37);
  for (int64_t k = 256; k < K; ++k) w[size_t(k)] = 0.003f * float(int(k % 23) - 7);
  const Int4Matrix m = quantize_int4(w.data(), 1, K);
  ASSERT_EQ(m.groups(), 3);
  EXPECT_EQ(m.zero[0], 0);
  EXPECT_EQ(m.zero[1], 15);
  EXPECT_GT(m.zero[2], 0);
  EXPECT_LT(m.zero[2], 15);
  expect_int4_round_trip(w, m);
  // Dequantized with a neighbour's zero point, most of a group is far outside the bound: the
  // check above tells the two apart.
  for (int64_t g = 0; g < 3; ++g) {
    const int64_t other = (g + 1) % 3;
    int outside = 0;
    for (int64_t k = g * 128; k < (g + 1) * 128; ++k) {
      const double wrong = (double(m.code(0, k)) - m.zero[size_t(other)]) * double(m.scale[size_t(g)]);
      outside += std::fabs(wrong - double(w[size_t(k)])) > 0.5 * m.scale[size_t(g)];
    }
    EXPECT_GT(outside, 64) << "group " << g << " with group " << other << "'s zero point";
  }
}

TEST(QuantizeInt4, ShortLastGroupHasItsOwnScale) {
  // K = 1600: 12 groups of 128 and one of 64. An outlier in the last 64 sets only their scale.
  const int64_t K = 1600;
  std::vector<float> w(size_t(2 * K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * float(int(i % 13) - 6);
  w[size_t(K + 1590)] = 3.0f;  // row 1, group 12
  const Int4Matrix m = quantize_int4(w.data(), 2, K);
  ASSERT_EQ(m.groups(), 13);
  EXPECT_FLOAT_EQ(m.scale[size_t(13 + 12)], (3.0f + 0.06f) / 15.0f);
  EXPECT_FLOAT_EQ(m.scale[size_t(13 + 11)], 0.12f / 15.0f) << "the group before it keeps its own range";
  EXPECT_FLOAT_EQ(m.scale[12], 0.12f / 15.0f) << "row 0's last group";
  expect_int4_round_trip(w, m);
}

TEST(QuantizeInt4, ZeroGroupGetsScaleOneAndZeros) {
  std::vector<float> w(256, 0.0f);
  for (int k = 128; k < 256; ++k) w[size_t(k)] = 0.25f * float(k % 5);
  w[3] = -0.0f;
  const Int4Matrix m = quantize_int4(w.data(), 1, 256);
  EXPECT_EQ(m.scale[0], 1.0f);
  EXPECT_EQ(m.zero[0], 0);
  for (int k = 0; k < 128; ++k) EXPECT_EQ(m.code(0, k), 0) << k;
  EXPECT_FLOAT_EQ(m.scale[1], 1.0f / 15.0f);
  expect_int4_round_trip(w, m);
}

TEST(QuantizeInt4, LargeMatrixOnManyCoresMatchesRowByRow) {
  const int64_t N = 1031, K = 4096 + 32;
  const std::vector<float> w = uniform_values(N * K, 9);
  const Int4Matrix all = quantize_int4(w.data(), N, K);
  expect_int4_round_trip(w, all);
  const int64_t G = all.groups();
  for (int64_t n : {int64_t{0}, int64_t{1}, N / 2, N - 1}) {
    const Int4Matrix one = quantize_int4(w.data() + n * K, 1, K);
    EXPECT_TRUE(std::equal(one.packed.begin(), one.packed.end(), all.packed.begin() + n * (K / 2))) << "row " << n;
    EXPECT_TRUE(std::equal(one.scale.begin(), one.scale.end(), all.scale.begin() + n * G)) << "row " << n;
    EXPECT_TRUE(std::equal(one.zero.begin(), one.zero.end(), all.zero.begin() + n * G)) << "row " << n;
  }
}

TEST(QuantizeInt4, Bf16TensorSameAsItsFp32Values) {
  std::vector<float> as_float;
  const Int4Matrix a =
      quantize_int4(bf16_matrix(2, 64, as_float, [](int i) { return 0.037f * float(i % 17) - 0.3f; }), "bf16 tensor");
  const Int4Matrix b = quantize_int4(as_float.data(), 2, 64);
  EXPECT_EQ(a.packed, b.packed);
  EXPECT_EQ(a.scale, b.scale);
  EXPECT_EQ(a.zero, b.zero);
  expect_int4_round_trip(as_float, a);
}

TEST(QuantizeInt4, RefusesShapesItCannotPackNamingWhatToDo) {
  std::vector<float> w(2 * 100, 0.5f);
  expect_error<QuantizeError>([&] { quantize_int4(w.data(), 2, 100, "h.0.attn.c_attn.weight"); },
                              {"h.0.attn.c_attn.weight", "K = 100", "multiple of 32", "--int8"});
  EXPECT_EQ(int4_shape_problem(3, 1600, "w"), "");
  EXPECT_NE(int4_shape_problem(3, 1601, "w"), "");
  expect_error<QuantizeError>([&] { quantize_int4(w.data(), 0, 32, "empty"); }, {"empty", "0 x 32"});
  const Tensor v = f32_ones(64);
  expect_error<QuantizeError>([&] { quantize_int4(v, "ln_1.weight"); }, {"ln_1.weight", "2-D", "1 dimensions"});
}

TEST(QuantizeInt4, RefusesNonFiniteWeightsNamingTensorAndRow) {
  std::vector<float> w(3 * 256, 0.5f);
  w[2 * 256 + 200] = std::numeric_limits<float>::quiet_NaN();  // row 2, group 1
  expect_error<QuantizeError>([&] { quantize_int4(w.data(), 3, 256, "h.5.mlp.c_fc.weight"); },
                              {"h.5.mlp.c_fc.weight", "row 2 of 3", "NaN", "without --int4"});
  w[2 * 256 + 200] = 0.5f;
  w[7] = std::numeric_limits<float>::infinity();
  expect_error<QuantizeError>([&] { quantize_int4(w.data(), 3, 256, "w"); }, {"row 0 of 3", "infinity"});
}

}  // namespace
}  // namespace gpt2::test
