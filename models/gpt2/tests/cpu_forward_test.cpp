// The float64 CPU forward on the tiny config: its ops against closed forms, decode against
// forward, causality, and a one-token case computed independently of the attention code.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu_forward.h"
#include "declare/rng.h"
#include "random_weights.h"
#include "test_files.h"
#include "weights.h"

namespace gpt2::test {
namespace {

// max |a - b| / max |a|
double rel_max_diff(std::span<const double> a, std::span<const double> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::fabs(a[i] - b[i])), scale = std::max(scale, std::fabs(a[i]));
  return diff / scale;
}

std::vector<int32_t> random_tokens(size_t n, int vocab, uint64_t seed) {
  wb::Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.range(0, vocab - 1));
  return t;
}

class CpuForward : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    RandomOptions o;
    o.seed = 11;
    write_random_weights(dir_->file("tiny.safetensors"), preset("tiny"), o);
    weights_ = new Weights(load_weights(dir_->file("tiny.safetensors")));
    model_ = new cpu::Model(*weights_);
  }
  static void TearDownTestSuite() {
    delete model_;
    delete weights_;
    delete dir_;
  }
  static TempDir* dir_;
  static Weights* weights_;
  static cpu::Model* model_;
};
TempDir* CpuForward::dir_ = nullptr;
Weights* CpuForward::weights_ = nullptr;
cpu::Model* CpuForward::model_ = nullptr;

TEST(CpuOps, LayerNormMatchesTheClosedForm) {
  // x = 1, 2, 3, 4: mean 2.5, biased variance 1.25.
  const std::vector<double> x = {1, 2, 3, 4}, g = {1.0, 0.5, -2.0, 3.0}, b = {0.1, -0.2, 0.3, 0.0};
  std::vector<double> y(4);
  cpu::layernorm(x, g, b, y);
  const double rstd = 1.0 / std::sqrt(1.25 + 1e-5);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], (x[i] - 2.5) * rstd * g[i] + b[i], 1e-15) << i;
  // With unit gain and no shift the output has mean 0 and variance 1.25 / (1.25 + eps).
  const std::vector<double> ones(4, 1.0), zeros(4, 0.0);
  cpu::layernorm(x, ones, zeros, y);
  double mean = 0, var = 0;
  for (double v : y) mean += v / 4;
  for (double v : y) var += (v - mean) * (v - mean) / 4;
  EXPECT_NEAR(mean, 0.0, 1e-15);
  EXPECT_NEAR(var, 1.25 / (1.25 + 1e-5), 1e-14);
}

TEST(CpuOps, GeluTanhMatchesTheClosedForm) {
  // 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))), evaluated separately to 16 digits.
  EXPECT_NEAR(cpu::gelu_tanh(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(cpu::gelu_tanh(-0.5), -0.15428599017485606, 1e-15);
  EXPECT_NEAR(cpu::gelu_tanh(2.5), 2.484915733910001, 1e-14);
  EXPECT_EQ(cpu::gelu_tanh(0.0), 0.0);
  for (double x : {0.1, 0.7, 1.3, 3.0, 8.0}) {
    EXPECT_NEAR(cpu::gelu_tanh(x) - cpu::gelu_tanh(-x), x, 1e-14) << x;  // tanh is odd
    const double exact = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));   // the erf GELU it approximates
    EXPECT_NEAR(cpu::gelu_tanh(x), exact, 5e-4) << x;
  }
}

TEST(CpuOps, LinearIsXTimesWTransposedPlusB) {
  // x (2, 3), W (out 2, in 3), b (2): y = x · Wᵀ + b, worked by hand.
  const std::vector<double> x = {1, 2, 3, -1, 0, 2}, w = {1, 0, -1, 2, 1, 0}, b = {0.5, -1};
  std::vector<double> y(4);
  cpu::linear(x, w, b, y, 2, 3, 2);
  EXPECT_EQ(y, (std::vector<double>{1 - 3 + 0.5, 2 + 2 - 1, -1 - 2 + 0.5, -2 + 0 - 1}));
}

TEST_F(CpuForward, LogitsAreFiniteAndVary) {
  const auto tokens = random_tokens(20, 251, 1);
  const auto logits = model_->forward(tokens);
  ASSERT_EQ(logits.size(), 20u * 251);
  double lo = INFINITY, hi = -INFINITY;
  for (double v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  EXPECT_GT(hi - lo, 0.1);  // not a constant
}

TEST_F(CpuForward, DecodeStepMatchesForwardAtEveryPosition) {
  const auto tokens = random_tokens(64, 251, 2);  // the whole context
  const auto all = model_->forward(tokens);       // (64, V)
  cpu::Decoder d(*model_);
  for (int t = 0; t < 64; ++t) {
    const auto step = d.decode(tokens[t]);
    ASSERT_LE(rel_max_diff(std::span(all).subspan(t * 251, 251), step), 1e-12) << "position " << t;
  }
  EXPECT_EQ(d.position(), 64);
  expect_error<std::invalid_argument>([&] { d.decode(1); }, {"context of 64 positions is full"});
}

TEST_F(CpuForward, PrefillThenDecodeMatchesForward) {
  const auto tokens = random_tokens(30, 251, 3);
  cpu::Decoder d(*model_);
  const auto last = d.prefill(std::span(tokens).first(17));
  const auto prefix = model_->forward(std::span(tokens).first(17));
  EXPECT_LE(rel_max_diff(std::span(prefix).subspan(16 * 251, 251), last), 1e-12);
  std::vector<double> step;
  for (int t = 17; t < 30; ++t) step = d.decode(tokens[t]);
  const auto all = model_->forward(tokens);
  EXPECT_LE(rel_max_diff(std::span(all).subspan(29 * 251, 251), step), 1e-12);
  // And the prefix's logits do not depend on how long the sequence is.
  EXPECT_LE(rel_max_diff(std::span(all).first(17 * 251), prefix), 1e-12);
}

TEST_F(CpuForward, IsCausal) {
  auto tokens = random_tokens(24, 251, 4);
  const auto before = model_->forward(tokens);
  const int j = 10;
  tokens[j] = (tokens[j] + 100) % 251;  // change one token
  const auto after = model_->forward(tokens);
  for (int i = 0; i < 24; ++i) {
    const double d = rel_max_diff(std::span(before).subspan(i * 251, 251), std::span(after).subspan(i * 251, 251));
    if (i < j)
      EXPECT_LE(d, 1e-13) << "position " << i << " sees the later token " << j;
    else
      EXPECT_GT(d, 1e-6) << "position " << i << " does not see token " << j;
  }
}

// One token attends only to itself: softmax of one score is 1, so attention returns its v.
// Computed here from the ops alone, without the attention code.
TEST_F(CpuForward, OneTokenPassesItsValueThroughAttention) {
  const cpu::Model& m = *model_;
  const int64_t C = 64, V = 251;
  const int32_t token = 123;
  std::vector<double> x(C), h(C), qkv(3 * C), y(C), u(4 * C), logits(V);
  for (int64_t i = 0; i < C; ++i) x[i] = m.wte[token * C + i] + m.wpe[i];
  for (const auto& b : m.blocks) {
    cpu::layernorm(x, b.ln_1_w, b.ln_1_b, h);
    cpu::linear(h, b.attn_w, b.attn_b, qkv, 1, C, 3 * C);
    const std::vector<double> v(qkv.begin() + 2 * C, qkv.end());  // every head's output is its v
    cpu::linear(v, b.attn_proj_w, b.attn_proj_b, y, 1, C, C);
    for (int64_t i = 0; i < C; ++i) x[i] += y[i];
    cpu::layernorm(x, b.ln_2_w, b.ln_2_b, h);
    cpu::linear(h, b.fc_w, b.fc_b, u, 1, C, 4 * C);
    for (double& e : u) e = cpu::gelu_tanh(e);
    cpu::linear(u, b.fc_proj_w, b.fc_proj_b, y, 1, 4 * C, C);
    for (int64_t i = 0; i < C; ++i) x[i] += y[i];
  }
  cpu::layernorm(x, m.ln_f_w, m.ln_f_b, h);
  for (int64_t v = 0; v < V; ++v) {
    logits[v] = 0;
    for (int64_t i = 0; i < C; ++i) logits[v] += h[i] * m.wte[v * C + i];
  }
  const std::vector<int32_t> one = {token};
  EXPECT_LE(rel_max_diff(logits, m.forward(one)), 1e-13);
}

TEST_F(CpuForward, Bfloat16WeightsGiveCloseLogits) {
  const Weights w16 = load_weights(dir_->file("tiny.safetensors"), {.dtype = wb::DType::BF16});
  const auto tokens = random_tokens(16, 251, 5);
  const auto a = model_->forward(tokens), b = cpu::forward(w16, tokens);
  const double d = rel_max_diff(a, b);
  EXPECT_LT(d, 0.05);  // weights rounded to 8 bits of mantissa
  EXPECT_GT(d, 1e-6);  // but they were rounded
}

TEST_F(CpuForward, BadTokensAreRefused) {
  const std::vector<int32_t> out_of_range = {1, 2, 251};
  expect_error<std::invalid_argument>([&] { model_->forward(out_of_range); }, {"token 251 at position 2", "[0, 251)"});
  const std::vector<int32_t> negative = {-1};
  expect_error<std::invalid_argument>([&] { model_->forward(negative); }, {"token -1 at position 0"});
  const auto long_seq = random_tokens(65, 251, 6);
  expect_error<std::invalid_argument>([&] { model_->forward(long_seq); }, {"65 tokens", "64 positions"});
  expect_error<std::invalid_argument>([&] { model_->forward({}); }, {"no tokens"});
  cpu::Decoder d(*model_);
  expect_error<std::invalid_argument>([&] { d.decode(300); }, {"token 300 at position 0"});
}

}  // namespace
}  // namespace gpt2::test
