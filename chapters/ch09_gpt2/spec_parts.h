// The pieces of chapter 9's op declarations that more than one op declares alike (spec.cu,
// spec_int4.cu): shape lists, the decode GEMVs' sizes and reference rows, the tensors of the
// fused and quantized ops, the quantized GEMVs' benchmark shapes, a title's epilogue, and the
// test of a failing output against a kernel's likely mistakes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "ch09.cuh"
#include "declare/op.cuh"

namespace ch09::parts {

// One shape {N: n, k_dim: k} per pair, in their order.
inline std::vector<wb::Shape> n_by(const char* k_dim, std::initializer_list<std::pair<int64_t, int64_t>> nk) {
  std::vector<wb::Shape> out;
  for (auto [n, k] : nk) out.push_back(wb::Shape{{"N", n}, {k_dim, k}});
  return out;
}

// Every N against every K (`k_dim`), N the outer loop; then the shapes of `more`.
inline std::vector<wb::Shape> n_grid(const char* k_dim, std::initializer_list<int64_t> ns,
                                     std::initializer_list<int64_t> ks, std::vector<wb::Shape> more) {
  std::vector<wb::Shape> out;
  for (int64_t n : ns) {
    for (int64_t k : ks) out.push_back(wb::Shape{{"N", n}, {k_dim, k}});
  }
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// A decode GEMV's reference rows: one per output row n.
inline int64_t rows_of_n(const wb::Shape& s) { return s["N"]; }

// A GEMV's FLOPs: 2 N K, K the dimension `k_dim` names.
inline std::function<double(const wb::Shape&)> gemv_flops(const char* k_dim) {
  return [k_dim](const wb::Shape& s) { return 2.0 * s["N"] * s[k_dim]; };
}

// A sum of `k_dim` + `extra` terms, each up to `scale` (wb::tol::terms).
inline wb::Tol terms_of(const char* k_dim, int extra, double scale) {
  return wb::tol::terms([k_dim, extra](const wb::Shape& s) { return s[k_dim] + extra; }, scale);
}

// Three random shapes, N up to `n_max` and C up to `c_max`, each with or without the GELU.
inline std::function<std::vector<wb::Shape>(wb::Rng&)> random_with_gelu(int64_t n_max, int64_t c_max) {
  return [n_max, c_max](wb::Rng& rng) {
    auto s = wb::shapes::random(3, {{"N", n_max}, {"C", c_max}})(rng);
    for (auto& one : s) one.set("gelu", rng.range(0, 1));
    return s;
  };
}

// ln_gemv's tensors (and its INT8 and INT4 forms'), its weights (w; q and scale; ...) given:
// x and r (h = x + r), gamma, beta (C); the weights; b (N); h (C); and y (N), within C + 1 terms
// of up to 0.1 * 3 (in BF16 the normalised row is rounded to BF16 before the product, as the
// unfused path stores it, which the scale covers).
inline std::vector<wb::TensorSpec> ln_gemv_tensors(wb::DType t, const std::vector<wb::TensorSpec>& weights) {
  std::vector<wb::TensorSpec> out = {wb::input("x", {"C"}, t, wb::dist::uniform(-2, 2)),
                                     wb::input("r", {"C"}, t, wb::dist::uniform(-1, 1)),
                                     wb::input("gamma", {"C"}, t, wb::dist::uniform(0.5, 1.5)),
                                     wb::input("beta", {"C"}, t, wb::dist::uniform(-0.5, 0.5))};
  out.insert(out.end(), weights.begin(), weights.end());
  out.push_back(wb::input("b", {"N"}, t, wb::dist::uniform(-1, 1)));
  out.push_back(wb::output("h", {"C"}, t, wb::tol::exact()));
  out.push_back(wb::output("y", {"N"}, t, terms_of("C", 1, 0.3)));
  return out;
}

// gemv_residual's tensors (and its quantized forms'), its weights given: x (K); the weights;
// b and res (N); y (N), within K + 2 terms of up to 0.1.
inline std::vector<wb::TensorSpec> residual_tensors(wb::DType t, const std::vector<wb::TensorSpec>& weights) {
  std::vector<wb::TensorSpec> out = {wb::input("x", {"K"}, t, wb::dist::uniform(-1, 1))};
  out.insert(out.end(), weights.begin(), weights.end());
  out.push_back(wb::input("b", {"N"}, t, wb::dist::uniform(-2, 2)));
  out.push_back(wb::input("res", {"N"}, t, wb::dist::uniform(-4, 4)));
  out.push_back(wb::output("y", {"N"}, t, terms_of("K", 2, 0.1)));
  return out;
}

// A decode GEMV's tensors on quantized weights (BF16 activations), its weights given: x (K);
// the weights; b (N) with an epilogue; y (N), within K + 1 terms of up to 0.1 (the BF16
// GEMV's: each term x times a weight of at most 0.1).
inline std::vector<wb::TensorSpec> quantized_gemv_tensors(Epilogue epi, const std::vector<wb::TensorSpec>& weights) {
  std::vector<wb::TensorSpec> out = {wb::input("x", {"K"}, wb::DType::BF16, wb::dist::uniform(-1, 1))};
  out.insert(out.end(), weights.begin(), weights.end());
  if (epi != Epilogue::None) out.push_back(wb::input("b", {"N"}, wb::DType::BF16, wb::dist::uniform(-2, 2)));
  out.push_back(wb::output("y", {"N"}, wb::DType::BF16, terms_of("K", 1, 0.1)));
  return out;
}

// `product` ("W · x") with the epilogue: itself, + b, or gelu_tanh(... + b).
inline std::string with_epilogue(Epilogue epi, const std::string& product) {
  if (epi == Epilogue::None) return product;
  return epi == Epilogue::Bias ? product + " + b" : "gelu_tanh(" + product + " + b)";
}

// A GEMV on quantized weights, benchmarked on GPT-2 124M's and 1.5B's matrices of its epilogue:
// the LM head (None); QKV and the MLP's projection (Bias); the MLP's first matmul (BiasGelu).
inline std::vector<wb::Shape> quantized_gemv_bench(Epilogue epi) {
  if (epi == Epilogue::None) return {wb::Shape{{"N", 50257}, {"K", 768}}, wb::Shape{{"N", 50257}, {"K", 1600}}};
  if (epi == Epilogue::Bias) {
    return {wb::Shape{{"N", 2304}, {"K", 768}}, wb::Shape{{"N", 768}, {"K", 3072}}, wb::Shape{{"N", 4800}, {"K", 1600}},
            wb::Shape{{"N", 1600}, {"K", 6400}}};
  }
  return {wb::Shape{{"N", 3072}, {"K", 768}}, wb::Shape{{"N", 6400}, {"K", 1600}}};
}

// A mistake a kernel may make: what element idx of y would then hold, within `tol`, and the
// message that names the mistake.
struct Mistake {
  std::function<double(int64_t)> expected;
  wb::Tolerance tol;
  std::string message;
};

// y's failing elements (the first 8 of them) tested against the mistakes `mistakes(inputs)`
// lists, in its order: the message of the first mistake that explains every one, or nothing.
inline std::string diagnose_y(const wb::Diagnosis& d,
                              const std::function<std::vector<Mistake>(const wb::RefCtx&)>& mistakes) {
  if (d.output != "y" || d.bad.empty() || d.inputs == nullptr || !d.got) return {};
  const std::vector<int64_t> tried(d.bad.begin(), d.bad.begin() + std::min<size_t>(d.bad.size(), 8));
  for (const Mistake& m : mistakes(*d.inputs)) {
    if (std::all_of(tried.begin(), tried.end(), [&](int64_t i) { return m.tol.allows(m.expected(i), d.got(i)); })) {
      return m.message;
    }
  }
  return {};
}

}  // namespace ch09::parts
