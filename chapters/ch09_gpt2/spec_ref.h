// The float64 pieces of chapter 9's references that more than one spec file uses (spec.cu,
// spec_int4.cu): GPT-2's GELU, the epilogues, a value rounded as a kernel stores it, and the
// LayerNorm of the fused decode ops' input row.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ch09.cuh"
#include "declare/op.cuh"

namespace ch09::ref {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr float kLnEps = 1e-5f;  // GPT-2's layer_norm_epsilon

inline double gelu_tanh_ref(double v) {
  return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (v + 0.044715 * v * v * v)));
}

inline double apply(Epilogue epi, double acc, double bias) {
  if (epi == Epilogue::None) return acc;
  acc += bias;
  return epi == Epilogue::BiasGelu ? gelu_tanh_ref(acc) : acc;
}

// v rounded to T, as a kernel stores it.
template <class T>
double round_as(double v) {
  const float f = static_cast<float>(v);
  if constexpr (std::is_same_v<T, bf16>) return wb::bf16_to_float(wb::float_to_bf16(f));
  return f;
}

// h (C) = T(x + r): the residual stream as stored, the FP32 sum rounded once.
template <class T>
std::vector<double> ln_h(const wb::RefCtx& r) {
  std::vector<double> h(r["C"]);
  for (size_t c = 0; c < h.size(); ++c) h[c] = round_as<T>(double(float(r.in("x").get(c)) + float(r.in("r").get(c))));
  return h;
}

template <class T>
void expect_h(const wb::RefCtx& r) {
  const std::vector<double> h = ln_h<T>(r);
  for (size_t c = 0; c < h.size(); ++c) r.expect("h", static_cast<int64_t>(c), h[c]);
}

// LayerNorm(h) (C) in float64, gamma and beta from the inputs of those names.
template <class T>
std::vector<double> ln_row(const wb::RefCtx& r) {
  const int64_t C = r["C"];
  std::vector<double> h = ln_h<T>(r);
  double mean = 0;
  for (double v : h) mean += v;
  mean /= double(C);
  double var = 0;
  for (double v : h) var += (v - mean) * (v - mean);
  const double rstd = 1.0 / std::sqrt(var / double(C) + double(kLnEps));
  for (int64_t c = 0; c < C; ++c)
    h[size_t(c)] = (h[size_t(c)] - mean) * rstd * r.in("gamma").get(c) + r.in("beta").get(c);
  return h;
}

}  // namespace ch09::ref
