// --check: every op of a prefill compared, inside the model run, with a float64 computation
// on the host from the op's own inputs (downloaded after it ran). So a failure points at the
// op and the layer, not at the logits 200 kernels later. Large ops are checked on a few
// sampled rows (the first, the last, the middle).
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "declare/dtype.h"
#include "model_impl.cuh"
#include "quantize.h"

namespace gpt2 {
namespace {

constexpr double kU32 = 1.0 / 16777216.0;

std::vector<int> sample_rows(int T) {
  std::set<int> s = {0, T - 1, T / 2, T / 3};
  return {s.begin(), s.end()};
}

std::string where(OpTag tag) {
  return tag.layer >= 0 ? "layer " + std::to_string(tag.layer) + " " + tag.name : std::string(tag.name);
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// The worst |got - ref| / (atol + rtol |ref|) so far, and the first element past 1.
struct Worst {
  double ratio = 0;
  std::string first;
  void see(const std::string& what, double ref, double got, double atol, double rtol) {
    const double lim = atol + rtol * std::fabs(ref);
    const double err = std::fabs(got - ref);
    const double r = std::isfinite(got) ? (lim > 0 ? err / lim : (err == 0 ? 0 : INFINITY)) : INFINITY;
    if (r > ratio) ratio = r;
    if (r > 1 && first.empty()) {
      first = what + " = " + num(got) + ", expected " + num(ref) + " (tolerance " + num(atol) + " + " + num(rtol) +
              "·|expected|)";
    }
  }
};

double round_to(wb::DType t, double v) {
  const float f = static_cast<float>(v);
  return t == wb::DType::BF16 ? wb::bf16_to_float(wb::float_to_bf16(f)) : f;
}

// acc (the sum with its bias) through the linear's epilogue: GPT-2's tanh GELU for BiasGelu.
double epilogue_ref(ch09::Epilogue epi, double acc) {
  if (epi != ch09::Epilogue::BiasGelu) return acc;
  return 0.5 * acc * (1.0 + std::tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
}

// A decode GEMV on quantized weights (T = 1) against float64 on the weights the kernel was
// given, W~[n][k] = dequantized(n, k): y[n] = epilogue(x · W~[n] + b[n]), within check_linear's
// tolerance. `weights` names them in the elements' labels ("INT8 weights").
template <class Dequantized>
Worst check_dequantized_gemv(const std::vector<double>& xr, const std::vector<double>& yr,
                             const std::vector<double>& bias, int N, int K, ch09::Epilogue epi, double rtol,
                             const char* weights, Dequantized dequantized) {
  Worst w;
  for (int n = 0; n < N; ++n) {
    double acc = 0, mag = std::fabs(bias[n]);
    for (int k = 0; k < K; ++k) {
      const double term = xr[k] * dequantized(n, k);  // x · dequantized W
      acc += term;
      mag += std::fabs(term);
    }
    acc += bias[n];
    const double ref = epilogue_ref(epi, acc);
    const double atol = 8 * kU32 * std::sqrt(double(K)) * mag * 1.2 + 1e-30;
    w.see("y[0][" + std::to_string(n) + "] (" + weights + ")", ref, yr[n], atol, rtol);
  }
  return w;
}

}  // namespace

std::vector<double> Model::Impl::fetch(const void* p, size_t n) const {
  std::vector<double> out(n);
  if (dtype == wb::DType::F32) {
    std::vector<float> raw(n);
    CUDA_CHECK(cudaMemcpy(raw.data(), p, n * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = raw[i];
  } else {
    std::vector<wb::BFloat16> raw(n);
    CUDA_CHECK(cudaMemcpy(raw.data(), p, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = wb::bf16_to_float(raw[i]);
  }
  return out;
}

void Model::Impl::record(OpTag tag, const std::string& failure, double worst_ratio) {
  report.ops_checked += 1;
  const std::string name = where(tag);
  if (!failure.empty()) {
    report.lines.push_back(name + ": WRONG: " + failure);
    if (report.ok) report.first_failure = name + ": " + failure;
    report.ok = false;
  } else {
    report.lines.push_back(name + ": ok (worst error " + num(worst_ratio) + " of the tolerance)");
  }
}

void Model::Impl::check_embedding(int T) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto tok = fetch(buf.resid, size_t(T) * C), posr = fetch(buf.branch, size_t(T) * C);
  Worst w;
  for (int t = 0; t < T; ++t) {
    const auto te = fetch(static_cast<const char*>(wte) + size_t(prompt[t]) * C * es, C);
    const auto pe = fetch(static_cast<const char*>(wpe) + size_t(pos + t) * C * es, C);
    for (int c = 0; c < C; ++c) {
      w.see("wte row of token " + std::to_string(prompt[t]) + " [" + std::to_string(c) + "]", te[c],
            tok[size_t(t) * C + c], 0, 0);
      w.see("wpe row " + std::to_string(t) + " [" + std::to_string(c) + "]", pe[c], posr[size_t(t) * C + c], 0, 0);
    }
  }
  record({"embedding", -1}, w.first, w.ratio);
}

void Model::Impl::check_layernorm(OpTag tag, const void* x, const void* r, const void* gamma, const void* beta,
                                  const void* h, const void* y, int T) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto g = fetch(gamma, C), b = fetch(beta, C);
  const double sq = std::sqrt(double(C));
  const double atol = 8 * kU32 * sq * 4.5 + (dtype == wb::DType::F32 ? 1e-5 : 4e-3);
  const double rtol = 2 * wb::unit_roundoff(dtype) + 8 * kU32 * sq;
  Worst w;
  for (int t : sample_rows(T)) {
    const size_t o = size_t(t) * C * es;
    const auto xr = fetch(static_cast<const char*>(x) + o, C), rr = fetch(static_cast<const char*>(r) + o, C);
    const auto hr = fetch(static_cast<const char*>(h) + o, C), yr = fetch(static_cast<const char*>(y) + o, C);
    std::vector<double> hv(C);
    double mean = 0;
    for (int c = 0; c < C; ++c) {
      hv[c] = round_to(dtype, double(float(xr[c]) + float(rr[c])));  // the FP32 sum, rounded once
      w.see("h[" + std::to_string(t) + "][" + std::to_string(c) + "]", hv[c], hr[c], 0, 0);
      mean += hv[c];
    }
    mean /= C;
    double var = 0;
    for (int c = 0; c < C; ++c) var += (hv[c] - mean) * (hv[c] - mean);
    const double rs = 1.0 / std::sqrt(var / C + kLayerNormEps);
    for (int c = 0; c < C; ++c) {
      w.see("y[" + std::to_string(t) + "][" + std::to_string(c) + "]", (hv[c] - mean) * rs * g[c] + b[c], yr[c], atol,
            rtol);
    }
  }
  record(tag, w.first, w.ratio);
}

void Model::Impl::check_linear(OpTag tag, const void* x, const void* wt, const void* b, const void* y, int T, int N,
                               int K, ch09::Epilogue epi) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto W = fetch(wt, size_t(N) * K);
  const std::vector<double> bias = b ? fetch(b, N) : std::vector<double>(N, 0.0);
  const double rtol = 2 * wb::unit_roundoff(dtype);
  Worst w;
  for (int t : sample_rows(T)) {
    const auto xr = fetch(static_cast<const char*>(x) + size_t(t) * K * es, K);
    const auto yr = fetch(static_cast<const char*>(y) + size_t(t) * N * es, N);
    for (int n = 0; n < N; ++n) {
      double acc = 0, mag = std::fabs(bias[n]);
      const double* wr = W.data() + size_t(n) * K;
      for (int k = 0; k < K; ++k) {
        acc += xr[k] * wr[k];
        mag += std::fabs(xr[k] * wr[k]);
      }
      acc += bias[n];
      const double ref = epilogue_ref(epi, acc);
      // An FP32 sum of K terms: a few units of FP32 roundoff times sqrt(K) times their magnitude.
      const double atol = 8 * kU32 * std::sqrt(double(K)) * mag * 1.2 + 1e-30;
      w.see("y[" + std::to_string(t) + "][" + std::to_string(n) + "]", ref, yr[n], atol, rtol);
    }
  }
  record(tag, w.first, w.ratio);
}

// A decode GEMV on INT8 weights (T = 1): float64 on the weights the kernel was given, the
// dequantized q[n][k] * scale[n] (not the BF16 originals: quantization is a choice, the
// kernel's arithmetic is what is checked here). Same tolerance as check_linear: the kernel's
// FP32 sum of K products x * q is exact per term, the scale adds one FP32 rounding.
void Model::Impl::check_linear_int8(OpTag tag, const void* x, const Int8Matrix& m, const void* b, const void* y, int N,
                                    int K, ch09::Epilogue epi) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<int8_t> q(size_t(N) * K);
  std::vector<float> scale(N);
  CUDA_CHECK(cudaMemcpy(q.data(), m.q, q.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(scale.data(), m.scale, scale.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const std::vector<double> bias = b ? fetch(b, N) : std::vector<double>(N, 0.0);
  const Worst w =
      check_dequantized_gemv(fetch(x, K), fetch(y, N), bias, N, K, epi, 2 * wb::unit_roundoff(dtype), "INT8 weights",
                             [&](int n, int k) { return double(q[size_t(n) * K + k]) * double(scale[n]); });
  record(tag, w.first, w.ratio);
  report.lines.back() += " [INT8 weights: float64 on the dequantized q * scale]";
}

// A decode GEMV on INT4 weights (T = 1), as the INT8 one: float64 on the weights the kernel was
// given, W~[n][k] = (q[n][k] - zero[n][g]) * scale[n][g], the codes read back from the device
// through the layout (quantize.h, int4_nibble). Same tolerance: each product x * (q - zero) is
// exact in FP32, each group's scale adds one FP32 rounding per 32 terms.
void Model::Impl::check_linear_int4(OpTag tag, const void* x, const Int4Matrix& m, const void* b, const void* y, int N,
                                    int K, ch09::Epilogue epi) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const int G = (K + int(kInt4Group) - 1) / int(kInt4Group);
  std::vector<uint8_t> q(size_t(N) * (K / 2)), zero(size_t(N) * G);
  std::vector<float> scale(size_t(N) * G);
  CUDA_CHECK(cudaMemcpy(q.data(), m.q, q.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(scale.data(), m.scale, scale.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(zero.data(), m.zero, zero.size(), cudaMemcpyDeviceToHost));
  const std::vector<double> bias = b ? fetch(b, N) : std::vector<double>(N, 0.0);
  const Worst w = check_dequantized_gemv(fetch(x, K), fetch(y, N), bias, N, K, epi, 2 * wb::unit_roundoff(dtype),
                                         "INT4 weights", [&](int n, int k) {
                                           const NibbleAt at = int4_nibble(n, k, K);
                                           const size_t g = size_t(n) * G + size_t(k) / kInt4Group;
                                           const double code = double((q[at.byte] >> at.shift) & 0xF);
                                           return (code - double(zero[g])) * double(scale[g]);
                                         });
  record(tag, w.first, w.ratio);
  report.lines.back() += " [INT4 weights: float64 on the dequantized (q - zero) * scale per group]";
}

void Model::Impl::check_kv_append(OpTag tag, const void* qkv, int T) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto q = fetch(qkv, size_t(T) * 3 * C);
  const auto k = fetch(kc[tag.layer], size_t(H) * cap * D), v = fetch(vc[tag.layer], size_t(H) * cap * D);
  Worst w;
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      for (int d = 0; d < D; ++d) {
        const size_t at = (size_t(h) * cap + pos + t) * D + d;
        const std::string i = "[" + std::to_string(h) + "][" + std::to_string(pos + t) + "][" + std::to_string(d) + "]";
        w.see("k_cache" + i, q[size_t(t) * 3 * C + C + h * D + d], k[at], 0, 0);
        w.see("v_cache" + i, q[size_t(t) * 3 * C + 2 * C + h * D + d], v[at], 0, 0);
      }
    }
  }
  record(tag, w.first, w.ratio);
}

void Model::Impl::check_attention(OpTag tag, const void* qkv, const void* att, int T) {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto q = fetch(qkv, size_t(T) * 3 * C);
  const auto k = fetch(kc[tag.layer], size_t(H) * cap * D), v = fetch(vc[tag.layer], size_t(H) * cap * D);
  const auto o = fetch(att, size_t(T) * C);
  double vmax = 0;
  for (double e : v) vmax = std::max(vmax, std::fabs(e));
  const double rtol = 2 * wb::unit_roundoff(dtype);
  const double atol = (dtype == wb::DType::F32 ? 1e-5 : 2e-3) * vmax;
  const double scale = 1.0 / std::sqrt(double(float(D)));
  Worst w;
  for (int t : sample_rows(T)) {
    const int keys = pos + t + 1;
    for (int h = 0; h < H; ++h) {
      std::vector<double> s(keys);
      double m = -INFINITY;
      for (int j = 0; j < keys; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += q[size_t(t) * 3 * C + h * D + d] * k[(size_t(h) * cap + j) * D + d];
        s[j] = dot * double(float(scale));
        m = std::max(m, s[j]);
      }
      double l = 0;
      for (double& e : s) l += (e = std::exp(e - m));
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < keys; ++j) acc += s[j] * v[(size_t(h) * cap + j) * D + d];
        w.see("att[" + std::to_string(t) + "][" + std::to_string(h * D + d) + "]", acc / l,
              o[size_t(t) * C + h * D + d], atol, rtol);
      }
    }
  }
  record(tag, w.first, w.ratio);
}

void Model::Impl::check_argmax() {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto lg = fetch(logits, V);
  int best = 0;
  for (int i = 1; i < V; ++i) {
    if (lg[i] > lg[best]) best = i;  // equal logits: the lower index stays (chapter 7's order)
  }
  int32_t got = -1;
  CUDA_CHECK(cudaMemcpy(&got, top_i, sizeof(got), cudaMemcpyDeviceToHost));
  std::string failure;
  if (got != best) {
    failure = "index " + std::to_string(got) + ", expected " + std::to_string(best) + " (logit " + num(lg[best]) + ")";
  }
  record({"argmax", -1}, failure, got == best ? 0.0 : INFINITY);
}

}  // namespace gpt2
