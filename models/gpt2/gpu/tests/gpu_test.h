// What the GPU model's test programs (model_test.cu, int4_test.cu) share: the skip without a
// GPU, random prompts, and --check's coverage of the quantized decode GEMVs.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device.cuh"
#include "model.h"
#include "weights.h"

#define SKIP_WITHOUT_GPU()                                               \
  do {                                                                   \
    if (auto reason = wb::gpu_missing_reason()) GTEST_SKIP() << *reason; \
  } while (0)

namespace gpt2::test {

// n token ids below `vocab`, from `seed`.
inline std::vector<int32_t> prompt_of(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = static_cast<int32_t>(rng() % vocab);
  return p;
}

// --check on quantized weights (`format`, BF16): one decode step after an 11-token prefill,
// each op checked, and the four GEMVs of each layer checked on the quantized weights, their
// lines marked `marker` ("INT8 weights").
inline void expect_check_covers_quantized_gemvs(const Weights& w, WeightFormat format, const char* marker) {
  Options o;
  o.dtype = wb::DType::BF16;
  o.weight_format = format;
  Model model = Model::from_weights(w, o);
  const CheckReport r = model.check_ops(prompt_of(11, w.config.vocab, 3));
  int marked = 0;
  for (const auto& l : r.lines) {
    std::printf("  %s\n", l.c_str());
    marked += l.find(marker) != std::string::npos;
  }
  EXPECT_TRUE(r.ok) << r.first_failure;
  EXPECT_EQ(r.ops_checked, 2 * (1 + 8 * w.config.n_layer + 3)) << "a prefill's ops, then a decode step's";
  EXPECT_EQ(marked, 4 * w.config.n_layer) << "attn_qkv, attn_proj, mlp_fc, mlp_proj of each layer";
}

// A BF16 model and the same on quantized weights (`format`, options `o` otherwise), both
// prefilled with one 13-token prompt: the quantized model's decode weights fewer bytes, its
// prefill the BF16 path's, bit for bit (`name` says which weights: "INT8"). `next` is the BF16
// model's next token.
struct PrefilledPair {
  Model bf16, quantized;
  int next;
};
inline PrefilledPair prefilled_pair(const Weights& w, Options o, WeightFormat format, const char* name) {
  Model bf16_model = Model::from_weights(w, o);
  o.weight_format = format;
  Model quantized = Model::from_weights(w, o);
  EXPECT_GT(format == WeightFormat::Int8 ? quantized.int8_weight_bytes() : quantized.int4_weight_bytes(), 0.0);
  EXPECT_LT(quantized.decode_weight_bytes(), bf16_model.decode_weight_bytes());
  const auto prompt = prompt_of(13, w.config.vocab, 21);
  const int next16 = bf16_model.prefill(prompt);
  const int next_quantized = quantized.prefill(prompt);
  // Prefill is the BF16 path in both: the same logits, bit for bit.
  EXPECT_EQ(quantized.logits(), bf16_model.logits()) << "prefill must not use the " << name << " weights";
  EXPECT_EQ(next_quantized, next16);
  return {std::move(bf16_model), std::move(quantized), next16};
}

}  // namespace gpt2::test
