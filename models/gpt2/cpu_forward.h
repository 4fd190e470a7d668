// GPT-2's forward pass in float64 on the CPU: the reference the GPU model is checked
// against. Plain loops, one op per function; meant for small configs (it converts every
// weight to double: 8 bytes per parameter, 1 GB for 124M).
//
//   x = wte[token] + wpe[position]                          (T, C)
//   per block:  x += attn_proj(causal_attention(c_attn(LN_1(x))))
//               x += fc_proj(gelu_tanh(fc(LN_2(x))))
//   logits = LN_f(x) · wteᵀ                                 (T, V)
//
//   auto logits = gpt2::cpu::forward(weights, tokens);      // (T, V): every position
//   gpt2::cpu::Model m(weights);  gpt2::cpu::Decoder d(m);
//   auto last = d.prefill(prompt);  auto next = d.decode(token);   // (V) each
//
// forward() computes all positions at once with a causal mask; the Decoder keeps each
// block's keys and values (the KV cache) and computes one position per call. The two are
// written separately, so that comparing them checks the cache, the positions and the mask.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "weights.h"

namespace gpt2::cpu {

// y = (x - mean) / sqrt(var + eps) * gamma + beta over one row of C values (var: biased).
void layernorm(std::span<const double> x, std::span<const double> gamma, std::span<const double> beta,
               std::span<double> y, double eps = kLayerNormEps);
// GPT-2's GELU, the tanh form: 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))).
double gelu_tanh(double x);
// y (rows, out) = x (rows, in) · Wᵀ + b, with W (out, in) row-major and b (out).
void linear(std::span<const double> x, std::span<const double> w, std::span<const double> b, std::span<double> y,
            int64_t rows, int64_t in, int64_t out);

// The weights in float64, converted once.
class Model {
 public:
  explicit Model(const Weights& w);
  // Logits of every position, (T, V) row-major. Throws std::invalid_argument for an empty
  // sequence, one longer than n_ctx, or a token id outside [0, V).
  std::vector<double> forward(std::span<const int32_t> tokens) const;

  struct Block {  // the same tensors as gpt2::Layer, in double, [out, in] matrices
    std::vector<double> ln_1_w, ln_1_b, attn_w, attn_b, attn_proj_w, attn_proj_b;
    std::vector<double> ln_2_w, ln_2_b, fc_w, fc_b, fc_proj_w, fc_proj_b;
  };
  Config config;
  std::vector<double> wte, wpe, ln_f_w, ln_f_b;  // (V, C), (P, C), (C), (C)
  std::vector<Block> blocks;
};

std::vector<double> forward(const Weights& w, std::span<const int32_t> tokens);  // Model(w).forward(tokens)

// One sequence, one token at a time, with a KV cache.
class Decoder {
 public:
  explicit Decoder(const Model& model);                          // the model must outlive the decoder
  std::vector<double> prefill(std::span<const int32_t> prompt);  // the last position's logits (V)
  std::vector<double> decode(int32_t token);                     // logits (V) of the next position
  int position() const { return pos_; }                          // tokens seen so far
 private:
  const Model& m_;
  std::vector<std::vector<double>> k_, v_;  // per block: (pos, C) keys and values so far
  int pos_ = 0;
};

}  // namespace gpt2::cpu
