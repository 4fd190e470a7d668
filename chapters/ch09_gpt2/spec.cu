// Chapter 9's ops, declared once (harness/spec/op.cuh).
//
//   linear_bias/{bf16,f32}       y (M, N) = x (M, K) · W (N, K)ᵀ + b              ex1
//   linear_bias_gelu/{bf16,f32}  y = gelu_tanh(x · Wᵀ + b)                          ex1
//   gemv/{bf16,f32}              y (N) = W (N, K) · x (K)  (the LM head, no bias)    ex2
//   gemv_bias/{bf16,f32}         y = W · x + b                                      ex2
//   gemv_bias_gelu/{bf16,f32}    y = gelu_tanh(W · x + b)                           ex2
//
// The learner writes the BF16 forms; the FP32 forms are what the solution and the library
// run in the model's FP32 path, and they are where a wrong GELU shows: the erf GELU differs
// from the tanh one by up to 5e-4, below BF16's rounding of y but far above FP32's.
#include <array>
#include <cmath>

#include "ch09.cuh"
#include "spec/op.cuh"

namespace ch09 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch09-transformer.md";

constexpr double kPi = 3.14159265358979323846;
double gelu_tanh_ref(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (v + 0.044715 * v * v * v))); }
double gelu_erf(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

double apply(Epilogue epi, double acc, double bias) {
  if (epi == Epilogue::None) return acc;
  acc += bias;
  return epi == Epilogue::BiasGelu ? gelu_tanh_ref(acc) : acc;
}

// Row `m` of x · Wᵀ (before the epilogue), in float64 on the inputs as rounded to T. `rows`
// is 0 for a GEMV (x has no row index).
double dot(const wb::RefCtx& r, int64_t m, int64_t n, bool w_as_k_by_n = false) {
  const int64_t K = r["K"], N = r["N"];
  const auto& x = r.in("x");
  const auto& w = r.in("w");
  double acc = 0;
  for (int64_t k = 0; k < K; ++k) acc += x.get(m * K + k) * w.get(w_as_k_by_n ? k * N + n : n * K + k);
  return acc;
}

// A failing element tested against the mistakes learners make, in the order they make them.
std::string diagnose(Epilogue epi, bool gemv, const wb::Diagnosis& d) {
  if (d.output != "y" || d.bad.empty() || d.inputs == nullptr || !d.got) return {};
  const wb::RefCtx& r = *d.inputs;
  const int64_t N = r["N"];
  const auto tol = wb::tolerance_for(r.in("x").dtype(), r["K"] + 1, 0.1);
  int tried = 0, transposed = 0, erf = 0, twice = 0;
  for (int64_t idx : d.bad) {
    if (tried == 8) break;
    ++tried;
    const int64_t m = gemv ? 0 : idx / N, n = gemv ? idx : idx % N;
    const double bias = epi == Epilogue::None ? 0.0 : r.in("b").get(n);
    const double got = d.got(idx);
    if (tol.allows(apply(epi, dot(r, m, n, true), bias), got)) ++transposed;
    if (epi == Epilogue::BiasGelu && tol.allows(gelu_erf(dot(r, m, n) + bias), got)) ++erf;
    if (epi != Epilogue::None && tol.allows(apply(epi, dot(r, m, n) + bias, bias), got)) ++twice;
  }
  if (tried > 0 && transposed == tried) {
    return "the output equals x · W with W read as [K, N] (element (k, n) at W[k * N + n]): W is [N, K], row n of W "
           "holds output n's K weights at W[n * K + k]";
  }
  if (tried > 0 && erf == tried) {
    return "the output equals the erf GELU, 0.5 v (1 + erf(v / sqrt 2)); GPT-2 uses the tanh form, "
           "0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))) (ch09::gelu_tanh)";
  }
  if (tried > 0 && twice == tried) return "the bias is added twice: once in the sum, once more in the epilogue";
  return {};
}

template <class T>
std::vector<wb::Shape> gemv_shapes() {
  std::vector<wb::Shape> out;
  for (auto [n, k] : std::initializer_list<std::pair<int64_t, int64_t>>{
           {1, 1}, {1, 7}, {7, 1}, {3, 129}, {31, 63}, {257, 129}, {129, 769}, {1000, 768}, {2304, 768},
           {3072, 768}, {768, 3072}, {769, 1023}, {6400, 1600}, {1600, 6400}, {1, 4097}, {50257, 768}}) {
    out.push_back(wb::Shape{{"N", n}, {"K", k}});
  }
  return out;
}

std::vector<wb::Shape> linear_shapes() {
  auto s = wb::shapes::gemm("M", "N", "K");
  // GPT-2's own: the QKV projection and the MLP of 124M at a 64-token prompt, 1.5B's MLP down.
  for (auto [m, n, k] : std::initializer_list<std::array<int64_t, 3>>{{64, 2304, 768}, {17, 3072, 768}, {9, 1600, 6400}}) {
    s.push_back(wb::Shape{{"M", m}, {"N", n}, {"K", k}});
  }
  return s;
}

template <class T>
wb::OpSpec<LinearFn<T>> linear_op(const char* name, Epilogue epi) {
  constexpr DType kT = wb::dtype_of<T>();
  auto b = wb::input("b", {"N"}, kT, wb::dist::uniform(-2, 2));
  return {
      .name = name,
      .dtype = kT == DType::F32 ? "f32" : "bf16",
      .title = std::string("y = ") + (epi == Epilogue::BiasGelu ? "gelu_tanh(x · Wᵀ + b)" : "x · Wᵀ + b") +
               ", W [N, K], FP32 accumulate",
      .docs = kDocs,
      .tensors = {wb::input("x", {"M", "K"}, kT, wb::dist::uniform(-1, 1)),
                  wb::input("w", {"N", "K"}, kT, wb::dist::uniform(-0.1, 0.1)), b,
                  wb::output("y", {"M", "N"}, kT,
                             wb::tol::terms([](const wb::Shape& s) { return s["K"] + 1; }, 0.1))},
      .reference =
          [epi](const wb::RefCtx& r, int64_t m) {
            const int64_t N = r["N"];
            for (int64_t n = 0; n < N; ++n) r.expect("y", m * N + n, apply(epi, dot(r, m, n), r.in("b").get(n)));
          },
      .ref_rows = [](const wb::Shape& s) { return s["M"]; },
      .test_shapes = linear_shapes(),
      .random_shapes = wb::shapes::random(3, {{"M", 300}, {"N", 300}, {"K", 700}}),
      .bench_shapes = {wb::Shape{{"M", 512}, {"N", epi == Epilogue::BiasGelu ? 3072 : 2304}, {"K", 768}}},
      .full_bench_shapes = {wb::Shape{{"M", 512}, {"N", epi == Epilogue::BiasGelu ? 6400 : 4800}, {"K", 1600}}},
      .bytes = [](const wb::Shape& s) {
        const double m = s["M"], n = s["N"], k = s["K"];
        return sizeof(T) * (m * k + n * k + n + m * n);
      },
      .flops = [](const wb::Shape& s) { return 2.0 * s["M"] * s["N"] * s["K"]; },
      .peak = kT == DType::F32 ? wb::Peak::FP32 : wb::Peak::BF16Tensor,
      .launch = [epi](LinearFn<T>* fn, const wb::Args& a, cudaStream_t st) {
        fn(a.in<T>("x"), a.in<T>("w"), a.in<T>("b"), a.out<T>("y"), a.i("M"), a.i("N"), a.i("K"), epi, st);
      },
      .checks = {.deterministic = 1},
      .diagnose = [epi](const wb::Diagnosis& d) { return diagnose(epi, false, d); },
  };
}

template <class T>
wb::OpSpec<GemvFn<T>> gemv_op(const char* name, Epilogue epi) {
  constexpr DType kT = wb::dtype_of<T>();
  std::vector<wb::TensorSpec> tensors = {wb::input("x", {"K"}, kT, wb::dist::uniform(-1, 1)),
                                         wb::input("w", {"N", "K"}, kT, wb::dist::uniform(-0.1, 0.1))};
  if (epi != Epilogue::None) tensors.push_back(wb::input("b", {"N"}, kT, wb::dist::uniform(-2, 2)));
  tensors.push_back(wb::output("y", {"N"}, kT, wb::tol::terms([](const wb::Shape& s) { return s["K"] + 1; }, 0.1)));
  const bool big = epi == Epilogue::None;  // the LM head: N = vocabulary
  return {
      .name = name,
      .dtype = kT == DType::F32 ? "f32" : "bf16",
      .title = std::string("one token: y = ") +
               (epi == Epilogue::None ? "W · x" : epi == Epilogue::Bias ? "W · x + b" : "gelu_tanh(W · x + b)") +
               ", W [N, K] streamed once",
      .docs = kDocs,
      .tensors = tensors,
      .reference =
          [epi](const wb::RefCtx& r, int64_t n) {
            r.expect("y", n, apply(epi, dot(r, 0, n), epi == Epilogue::None ? 0.0 : r.in("b").get(n)));
          },
      .ref_rows = [](const wb::Shape& s) { return s["N"]; },
      .test_shapes = gemv_shapes<T>(),
      .random_shapes = wb::shapes::random(3, {{"N", 5000}, {"K", 3000}}),
      .bench_shapes = {big ? wb::Shape{{"N", 50257}, {"K", 768}} : wb::Shape{{"N", 3072}, {"K", 768}}},
      .full_bench_shapes = {big ? wb::Shape{{"N", 50257}, {"K", 1600}} : wb::Shape{{"N", 6400}, {"K", 1600}}},
      .bytes = [](const wb::Shape& s) {
        const double n = s["N"], k = s["K"];
        return sizeof(T) * (n * k + k + 2 * n);
      },
      .flops = [](const wb::Shape& s) { return 2.0 * s["N"] * s["K"]; },
      .peak = wb::Peak::FP32,
      .launch = [epi](GemvFn<T>* fn, const wb::Args& a, cudaStream_t st) {
        const T* b = epi == Epilogue::None ? nullptr : a.in<T>("b");
        fn(a.in<T>("x"), a.in<T>("w"), b, a.out<T>("y"), a.i("N"), a.i("K"), epi, st);
      },
      .checks = {.deterministic = 1},
      .diagnose = [epi](const wb::Diagnosis& d) { return diagnose(epi, true, d); },
  };
}

template <class T>
void add_all() {
  wb::add_op(linear_op<T>("linear_bias", Epilogue::Bias));
  wb::add_op(linear_op<T>("linear_bias_gelu", Epilogue::BiasGelu));
  wb::add_op(gemv_op<T>("gemv", Epilogue::None));
  wb::add_op(gemv_op<T>("gemv_bias", Epilogue::Bias));
  wb::add_op(gemv_op<T>("gemv_bias_gelu", Epilogue::BiasGelu));
}

}  // namespace

WB_OPS(ch09) {
  add_all<bf16>();
  add_all<float>();
}

}  // namespace ch09
