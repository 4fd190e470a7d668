// Chapter 9's ops, declared once (harness/declare/op.cuh).
//
//   linear_bias/{bf16,f32}       y (M, N) = x (M, K) · W (N, K)ᵀ + b              ex1
//   linear_bias_gelu/{bf16,f32}  y = gelu_tanh(x · Wᵀ + b)                          ex1
//   gemv/{bf16,f32}              y (N) = W (N, K) · x (K)  (the LM head, no bias)    ex2
//   gemv_bias/{bf16,f32}         y = W · x + b                                      ex2
//   gemv_bias_gelu/{bf16,f32}    y = gelu_tanh(W · x + b)                           ex2
//   gemv_w8a16{,_bias,_bias_gelu}/bf16   the three GEMVs on INT8 weights q (N, K) with one
//                                FP32 scale per row: y = epilogue(scale · (q · x) + b)   v5
//   ln_gemv/{bf16,f32}           h = x + r; y = [gelu_tanh](W · LayerNorm(h) + b)        v6
//   gemv_residual/{bf16,f32}     y = res + W · x + b                                     v6
//   gemv_argmax/{bf16,f32}       y = W · x, and its argmax (index, value)                v6
//   ln_gemv_w8a16/bf16           ln_gemv on INT8 weights: y = [gelu](s · (q · LN(h)) + b)  v6
//   gemv_residual_w8a16/bf16     gemv_residual on INT8 weights: y = res + s · (q · x) + b v6
//   (the INT4 forms, gemv_w4a16*, ln_gemv_w4a16, gemv_residual_w4a16: spec_int4.cu)
//
// The learner writes the BF16 forms; the FP32 forms are what the solution and the library
// run in the model's FP32 path. A wrong GELU shows in both: the erf GELU differs from the
// tanh one by up to 5e-4, below BF16's rounding of y where y is near 1, but in the negative
// tail (v in [-3.7, -2.6], where GELU is -1e-2 ... -4e-4) the two differ by 10 % to 80 % of
// the value; the "gelu_tail" inputs put every v there, with small weights (|w| < 1/64,
// K <= 128) so that the sum's rounding in any order stays far below that gap, and a
// tolerance of one rounding of y plus about 3e-5 (see y_tol): BF16 tells them apart too.
//
// Beyond the catalogue:
//   * the GELU at the edge of the range ("gelu_large": v in +-[77, 213]): a tanh evaluated as
//     (e^2z - 1) / (e^2z + 1) overflows to NaN there;
//   * vector tails: K = 772 and 4100 (rows of W 8-byte aligned in BF16: a 16-byte path chosen
//     by the FP32 rule K % 4 == 0 faults), K = 1030 (4-byte aligned), and N = 1001 with
//     aligned rows (y's tail);
//   * large cases (tag "large"): a GEMV whose W passes 2^31 elements (2,797,000 rows of 768,
//     the last ~800 rows starting past element 2^31; 4.3 GB in BF16, 8.6 GB in FP32) and a
//     linear layer whose y does (65,537 x 32,769, K = 8): an offset n * K or m * N kept in an
//     int wraps;
//   * race shapes (OpSpec::race_shapes): 4100 x 8200 x 64 (over 2,000 tiles of 128 x 128) and
//     a GEMV of 20,011 rows: every block of a grid that fits on the GPU at once loops.
#include <array>
#include <cmath>
#include <functional>
#include <type_traits>

#include "ch09.cuh"
#include "declare/op.cuh"
#include "spec_parts.h"
#include "spec_ref.h"

namespace ch09 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch09-transformer.md";

using namespace ref;    // gelu_tanh_ref, apply, round_as, ln_h, expect_h, ln_row, kLnEps (spec_ref.h)
using namespace parts;  // n_by, n_grid, rows_of_n, gemv_flops, terms_of, diagnose_y, ... (spec_parts.h)

double gelu_erf(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

// The tolerance of y: the dot product's rounding (by terms), and for the GELU ops an allowance
// of 1e-5 (absolute and relative) for a tanh evaluated by a fast FP32 routine: cuBLASLt's GELU
// epilogue is off by up to ~4e-6 on an H100. The erf GELU differs from the tanh form by 1e-4
// and more wherever |v| >= 0.8, so that mistake is still caught.
//
// On the "gelu_tail" inputs (shape parameter gelu_tail = the bound of |w|): x in [-1, 1), w in
// +-wmax, K <= 128 and b in [-3.7, -2.6), so v = x · w + b lies in the GELU's negative tail.
// There the error a correct kernel makes is: the FP32 sum of K products (exact products in
// BF16; any order), at most (K + 1) u K wmax, and the bias add, 4u, both damped by |gelu'| <
// 0.1 there (bounded by 1.13 below); the 1e-5 fast-tanh allowance; and one rounding of y to T,
// 2 u(T) relative. Nothing of the BF16 tolerance's sqrt(K) absolute term, which is made for
// cancellation in sums near zero and would hide the 4e-4 .. 2e-3 gap to the erf GELU.
wb::Tol y_tol(Epilogue epi, wb::Tol base) {
  if (epi != Epilogue::BiasGelu) return base;
  auto wide = wb::tol::widened(std::move(base), 1e-5, 1e-5, "1e-5 for a fast tanh in the GELU");
  return {[wide](const wb::Shape& s, DType t) {
            const double wmax = s.param_or("gelu_tail", 0.0);
            if (wmax <= 0) return wide.make(s, t);
            constexpr double kU32 = 1.0 / 16777216.0;
            const double K = static_cast<double>(s["K"]);
            return wb::Tolerance{1e-5 + 1.13 * ((K + 1) * kU32 * K * wmax + 4 * kU32), 2 * wb::unit_roundoff(t) + 1e-5};
          },
          wide.text + " (on the gelu_tail inputs: the FP32 sum and one rounding of y)"};
}

// The GELU ops' extra inputs: "gelu_tail" (every v in the negative tail, where the erf GELU
// is 10 % to 80 % away from the tanh one) and "gelu_large" (|v| from 77 to 213, where a tanh
// through exp(2z) overflows). `shapes` have K <= 128.
std::vector<wb::InputSet> gelu_sets(std::vector<wb::Shape> shapes) {
  constexpr double kWmax = 1.0 / 64;
  auto tail = shapes;
  for (auto& x : tail) x.set_param("gelu_tail", kWmax);
  const wb::Dist far =
      wb::dist::custom("+-[90, 200], random signs", [](wb::HostTensor& t, const wb::Shape&, wb::Rng& rng) {
        for (int64_t i = 0; i < t.count(); ++i) t.set(i, (rng.next() & 1 ? 1.0 : -1.0) * rng.uniform(90, 200));
      });
  return {{"gelu_tail", {{"w", wb::dist::uniform(-kWmax, kWmax)}, {"b", wb::dist::uniform(-3.7, -2.6)}}, tail},
          {"gelu_large", {{"b", far}}, shapes}};
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
  return diagnose_y(d, [epi, gemv](const wb::RefCtx& r) {
    const int64_t N = r["N"];
    const auto tol = r.shape().param_or("gelu_tail", 0.0) > 0
                         ? y_tol(epi, wb::tol::exact()).make(r.shape(), r.in("x").dtype())
                         : wb::tolerance_for(r.in("x").dtype(), r["K"] + 1, 0.1);
    // y[idx] is row m, column n; the bias of column n
    const auto m = [gemv, N](int64_t idx) { return gemv ? 0 : idx / N; };
    const auto n = [gemv, N](int64_t idx) { return gemv ? idx : idx % N; };
    const auto bias = [&r, epi, n](int64_t idx) { return epi == Epilogue::None ? 0.0 : r.in("b").get(n(idx)); };
    std::vector<Mistake> out = {
        {[&r, epi, m, n, bias](int64_t i) { return apply(epi, dot(r, m(i), n(i), true), bias(i)); }, tol,
         "the output equals x · W with W read as [K, N] (element (k, n) at W[k * N + n]): W is [N, K], row n of W "
         "holds output n's K weights at W[n * K + k]"}};
    if (epi == Epilogue::BiasGelu) {
      out.push_back({[&r, m, n, bias](int64_t i) { return gelu_erf(dot(r, m(i), n(i)) + bias(i)); }, tol,
                     "the output equals the erf GELU, 0.5 v (1 + erf(v / sqrt 2)); GPT-2 uses the tanh form, "
                     "0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))) (ch09::gelu_tanh)"});
    }
    if (epi != Epilogue::None) {
      out.push_back({[&r, epi, m, n, bias](int64_t i) { return apply(epi, dot(r, m(i), n(i)) + bias(i), bias(i)); },
                     tol, "the bias is added twice: once in the sum, once more in the epilogue"});
    }
    return out;
  });
}

template <class T>
std::vector<wb::Shape> gemv_shapes() {
  std::vector<wb::Shape> out =
      n_by("K", {{1, 1},
                 {1, 7},
                 {7, 1},
                 {3, 129},
                 {31, 63},
                 {257, 129},
                 {129, 769},
                 {1000, 768},
                 {2304, 768},
                 {3072, 768},
                 {768, 3072},
                 {769, 1023},
                 {6400, 1600},
                 {1600, 6400},
                 {1, 4097},
                 {50257, 768},
                 // vector tails: rows of W 8-byte aligned (K = 772, 4100), 4-byte aligned (1030); y's tail (N = 1001)
                 {257, 772},
                 {3, 4100},
                 {129, 1030},
                 {1001, 768}});
  // W past 2^31 elements: rows 2,796,203 and on start past element 2^31.
  out.push_back(wb::Shape{{"N", 2797000}, {"K", 768}}.tag("large"));
  return out;
}

std::vector<wb::Shape> linear_shapes() {
  auto s = wb::shapes::gemm("M", "N", "K");
  // GPT-2's own: the QKV projection and the MLP of 124M at a 64-token prompt, 1.5B's MLP down.
  for (auto [m, n, k] : std::initializer_list<std::array<int64_t, 3>>{{64, 2304, 768},
                                                                      {17, 3072, 768},
                                                                      {9, 1600, 6400},
                                                                      // vector tails (see gemv_shapes)
                                                                      {17, 129, 772},
                                                                      {9, 65, 1030},
                                                                      {9, 1001, 768}}) {
    s.push_back(wb::Shape{{"M", m}, {"N", n}, {"K", k}});
  }
  // y past 2^31 elements (rows 65,536 and on start past it), K = 8: 4.3 GB in BF16.
  s.push_back(wb::Shape{{"M", 65537}, {"N", 32769}, {"K", 8}}.tag("large"));
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
                             y_tol(epi, wb::tol::terms([](const wb::Shape& s) { return s["K"] + 1; }, 0.1)))},
      .reference =
          [epi](const wb::RefCtx& r, int64_t m) {
            const int64_t N = r["N"];
            for (int64_t n = 0; n < N; ++n) r.expect("y", m * N + n, apply(epi, dot(r, m, n), r.in("b").get(n)));
          },
      .ref_rows = [](const wb::Shape& s) { return s["M"]; },
      .test_shapes = linear_shapes(),
      .random_shapes = wb::shapes::random(3, {{"M", 300}, {"N", 300}, {"K", 700}}),
      .input_sets = epi == Epilogue::BiasGelu ? gelu_sets({wb::Shape{{"M", 17}, {"N", 129}, {"K", 64}},
                                                           wb::Shape{{"M", 64}, {"N", 257}, {"K", 128}}})
                                              : std::vector<wb::InputSet>{},
      .race_shapes = {wb::Shape{{"M", 4100}, {"N", 8200}, {"K", 64}}},
      // A 512-token prefill, and a batched decode step of 16 sequences (the skinny GEMM of v7).
      .bench_shapes = {wb::Shape{{"M", 512}, {"N", epi == Epilogue::BiasGelu ? 3072 : 2304}, {"K", 768}},
                       wb::Shape{{"M", 16}, {"N", epi == Epilogue::BiasGelu ? 3072 : 2304}, {"K", 768}}},
      // --full adds GPT-2 1.5B's QKV (or fc) GEMM and, for bias alone, 124M's two projections
      // (N = 768, K = 768 and 3072): with the QKV and fc shapes above, the four linears of a
      // 124M prefill at 512 tokens.
      .full_bench_shapes = epi == Epilogue::BiasGelu
                               ? std::vector<wb::Shape>{wb::Shape{{"M", 512}, {"N", 6400}, {"K", 1600}}}
                               : std::vector<wb::Shape>{wb::Shape{{"M", 512}, {"N", 4800}, {"K", 1600}},
                                                        wb::Shape{{"M", 512}, {"N", 768}, {"K", 768}},
                                                        wb::Shape{{"M", 512}, {"N", 768}, {"K", 3072}}},
      .bytes =
          [](const wb::Shape& s) {
            const double m = s["M"], n = s["N"], k = s["K"];
            return sizeof(T) * (m * k + n * k + n + m * n);
          },
      .flops = [](const wb::Shape& s) { return 2.0 * s["M"] * s["N"] * s["K"]; },
      .peak = kT == DType::F32 ? wb::Peak::FP32 : wb::Peak::BF16Tensor,
      .launch =
          [epi](LinearFn<T>* fn, const wb::Args& a, cudaStream_t st) {
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
  tensors.push_back(wb::output("y", {"N"}, kT, y_tol(epi, terms_of("K", 1, 0.1))));
  const bool big = epi == Epilogue::None;  // the LM head: N = vocabulary
  return {
      .name = name,
      .dtype = kT == DType::F32 ? "f32" : "bf16",
      .title = "one token: y = " + with_epilogue(epi, "W · x") + ", W [N, K] streamed once",
      .docs = kDocs,
      .tensors = tensors,
      .reference =
          [epi](const wb::RefCtx& r, int64_t n) {
            r.expect("y", n, apply(epi, dot(r, 0, n), epi == Epilogue::None ? 0.0 : r.in("b").get(n)));
          },
      .ref_rows = rows_of_n,
      .test_shapes = gemv_shapes<T>(),
      .random_shapes = wb::shapes::random(3, {{"N", 5000}, {"K", 3000}}),
      .input_sets = epi == Epilogue::BiasGelu
                        ? gelu_sets({wb::Shape{{"N", 257}, {"K", 64}}, wb::Shape{{"N", 3072}, {"K", 128}}})
                        : std::vector<wb::InputSet>{},
      .race_shapes = {wb::Shape{{"N", 20011}, {"K", 768}}},
      .bench_shapes = {big ? wb::Shape{{"N", 50257}, {"K", 768}} : wb::Shape{{"N", 3072}, {"K", 768}}},
      .full_bench_shapes = {big ? wb::Shape{{"N", 50257}, {"K", 1600}} : wb::Shape{{"N", 6400}, {"K", 1600}}},
      .bytes =
          [](const wb::Shape& s) {
            const double n = s["N"], k = s["K"];
            return sizeof(T) * (n * k + k + 2 * n);
          },
      .flops = gemv_flops("K"),
      .peak = wb::Peak::FP32,
      .launch =
          [epi](GemvFn<T>* fn, const wb::Args& a, cudaStream_t st) {
            const T* b = epi == Epilogue::None ? nullptr : a.in<T>("b");
            fn(a.in<T>("x"), a.in<T>("w"), b, a.out<T>("y"), a.i("N"), a.i("K"), epi, st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [epi](const wb::Diagnosis& d) { return diagnose(epi, true, d); },
  };
}

// --- INT8 weights (W8A16) --------------------------------------------------------------
// The GEMV of decode on weights quantized per output row (models/gpt2/quantize.h): q int8 in
// [-127, 127], scale FP32 > 0, W[n][k] ~ q[n][k] * scale[n]. No exercise: the solution's
// v5_gemv_w8a16 and a reference that dequantizes to BF16 once and calls cuBLASLt.

// sum_k x[k] * q[n][k] in float64, before the scale; `q_as_k_by_n` reads q as [K, N].
double dot_q(const wb::RefCtx& r, int64_t n, bool q_as_k_by_n = false) {
  const int64_t K = r["K"], N = r["N"];
  const auto& x = r.in("x");
  const auto& q = r.in("q");
  double acc = 0;
  for (int64_t k = 0; k < K; ++k) acc += x.get(k) * q.get(q_as_k_by_n ? k * N + n : n * K + k);
  return acc;
}

// q (N, K) int8 and scale (N), K the dimension `k_dim` names. 127 * scale in [0.05, 0.1]: the
// weights q * scale lie in +-0.1, as the BF16 GEMV's w.
std::vector<wb::TensorSpec> w8_weights(const char* k_dim) {
  return {wb::input("q", {"N", k_dim}, DType::I8, wb::dist::ints(-127, 127)),
          wb::input("scale", {"N"}, DType::F32, wb::dist::uniform(0.05 / 127, 0.1 / 127))};
}

std::string diagnose_w8a16(Epilogue epi, const wb::Diagnosis& d) {
  return diagnose_y(d, [epi](const wb::RefCtx& r) {
    const auto bias = [&r, epi](int64_t n) { return epi == Epilogue::None ? 0.0 : r.in("b").get(n); };
    return std::vector<Mistake>{
        {[&r, epi, bias](int64_t n) { return apply(epi, dot_q(r, n), bias(n)); },
         wb::tolerance_for(DType::BF16, r["K"] + 1, 127.0),  // terms x * q, up to 127
         "the output equals the sum of x[k] * q[n][k] without the scale: multiply row n's sum by scale[n] "
         "(once, after the dot product) before the bias"},
        {[&r, epi, bias](int64_t n) { return apply(epi, r.in("scale").get(n) * dot_q(r, n, true), bias(n)); },
         wb::tolerance_for(DType::BF16, r["K"] + 1, 0.1),
         "the output equals q read as [K, N] (element (k, n) at q[k * N + n]): q is [N, K], row n holds output "
         "n's K weights at q[n * K + k]"}};
  });
}

std::vector<wb::Shape> gemv_w8a16_shapes() {
  // K: 1, the 16-weight load's edges (15, 16, 17), GPT-2's 768, 1600 and 6400, and primes; N:
  // 1, 3, 124M's QKV width (2304) and the vocabulary (50257).
  return n_by("K", {{1, 1},       {1, 15},     {1, 16},     {1, 17},      {3, 1},       {3, 15},      {3, 16},
                    {3, 17},      {3, 768},    {3, 1600},   {3, 6400},    {1, 6400},    {31, 63},     {257, 129},
                    {129, 769},   {2304, 1},   {2304, 17},  {2304, 768},  {2304, 1600}, {2304, 6400}, {4800, 1600},
                    {1600, 6400}, {50257, 16}, {50257, 17}, {50257, 768}, {50257, 1600}});
}

wb::OpSpec<GemvW8Fn> gemv_w8a16_op(const char* name, Epilogue epi) {
  // y's tolerance: each term x[k] * q[n][k] * scale[n] is at most 0.1 in magnitude, as
  // x[k] * w[n][k] of the BF16 GEMV, and the sum is FP32 as there (x * q is exact in FP32; the
  // scale adds one rounding): the same tolerance, K + 1 terms with the bias, one rounding to
  // BF16. q and the scale are inputs here, not approximations of anything: INT8's own error (W
  // against q * scale) is the model's to bound (gpt2 --int8 --check, model_test.cu).
  std::vector<wb::Shape> full;  // with the bias also attention's projection: 124M, 1.5B
  if (epi == Epilogue::Bias) full = {wb::Shape{{"N", 768}, {"K", 768}}, wb::Shape{{"N", 1600}, {"K", 1600}}};
  return {
      .name = name,
      .dtype = "bf16",
      .title = "one token, INT8 weights: y = " + with_epilogue(epi, "s · (q · x)") + ", q [N, K] int8, s [N] FP32",
      .docs = kDocs,
      .tensors = quantized_gemv_tensors(epi, w8_weights("K")),
      .reference =
          [epi](const wb::RefCtx& r, int64_t n) {
            // sum_k x[k] * q[n][k] * scale[n] + b[n], the scale taken out of the sum (exact in float64).
            const double bias = epi == Epilogue::None ? 0.0 : r.in("b").get(n);
            r.expect("y", n, apply(epi, r.in("scale").get(n) * dot_q(r, n), bias));
          },
      .ref_rows = rows_of_n,
      .test_shapes = gemv_w8a16_shapes(),
      .random_shapes = wb::shapes::random(3, {{"N", 5000}, {"K", 3000}}),
      .bench_shapes = quantized_gemv_bench(epi),
      .full_bench_shapes = full,
      // int8 weights, FP32 scales, x in, y out (and the bias): what a decode step streams.
      .bytes =
          [epi](const wb::Shape& s) {
            const double n = s["N"], k = s["K"];
            return n * k + 4 * n + 2 * k + 2 * n + (epi == Epilogue::None ? 0 : 2 * n);
          },
      .flops = gemv_flops("K"),
      .peak = wb::Peak::FP32,
      .launch =
          [epi](GemvW8Fn* fn, const wb::Args& a, cudaStream_t st) {
            const bf16* b = epi == Epilogue::None ? nullptr : a.in<bf16>("b");
            fn(a.in<bf16>("x"), a.in<int8_t>("q"), a.in<float>("scale"), b, a.out<bf16>("y"), a.i("N"), a.i("K"), epi,
               st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [epi](const wb::Diagnosis& d) { return diagnose_w8a16(epi, d); },
  };
}

// --- the fused decode step (v6_fused_decode) ----------------------------------------------
// No exercise: the solution's kernels of the fused decode step, each against float64.
//   ln_gemv/{bf16,f32}        h = T(x + r); y = W · LayerNorm(h) + b, and with gelu = 1
//                             y = gelu_tanh(W · LayerNorm(h) + b): ln_1 -> QKV, ln_2 -> MLP
//   gemv_residual/{bf16,f32}  y = res + W · x + b: the output projections with the residual add
//   gemv_argmax/{bf16,f32}    y = W · x and the argmax of y as stored (index, value): the LM head

// ln_gemv's row n before the bias: sum_c w[n][c] * LayerNorm(h)[c] in float64. `w` names the
// weights' input (w, or q for the INT8 form, whose scale the caller applies).
template <class T>
double ln_dot(const wb::RefCtx& r, int64_t n, const char* w) {
  const int64_t C = r["C"];
  const std::vector<double> xn = ln_row<T>(r);
  double acc = 0;
  for (int64_t c = 0; c < C; ++c) acc += r.in(w).get(n * C + c) * xn[size_t(c)];
  return acc;
}

// ln_gemv's shapes beyond its grid of N and C (below).
std::vector<wb::Shape> ln_gemv_more_shapes() {
  return n_by("C", {{257, 129}, {31, 1023}, {129, 769}, {3072, 768}, {4800, 1600}, {50257, 768}, {9, 8192}});
}

// C = 1, 7, 64, 768, 1600 against N = 1, 3, 2304, 6400; then rows whose length is not a whole
// number of 16-byte pieces (C % 8 != 0), 124M's MLP, 1.5B's QKV, the vocabulary (more rows
// than the grid has CTAs: each CTA loops) and the longest row the kernel takes; each with
// and without the GELU.
std::vector<wb::Shape> ln_gemv_shapes() {
  return wb::shapes::each_with(n_grid("C", {1, 3, 2304, 6400}, {1, 7, 64, 768, 1600}, ln_gemv_more_shapes()), "gelu",
                               {0, 1});
}

template <class T>
wb::OpSpec<LnGemvFn<T>> ln_gemv_op() {
  constexpr DType kT = wb::dtype_of<T>();
  return {
      .name = "ln_gemv",
      .dtype = kT == DType::F32 ? "f32" : "bf16",
      .title = "one token: h = x + r, y = [gelu_tanh](W · LayerNorm(h) + b), the LayerNorm in the GEMV's prologue",
      .docs = kDocs,
      .tensors = ln_gemv_tensors(kT, {wb::input("w", {"N", "C"}, kT, wb::dist::uniform(-0.1, 0.1))}),
      .reference =
          [](const wb::RefCtx& r, int64_t n) {
            if (n == 0) expect_h<T>(r);
            r.expect("y", n,
                     apply(r["gelu"] ? Epilogue::BiasGelu : Epilogue::Bias, ln_dot<T>(r, n, "w"), r.in("b").get(n)));
          },
      .ref_rows = rows_of_n,
      .test_shapes = ln_gemv_shapes(),
      .random_shapes = random_with_gelu(5000, 2000),
      .bench_shapes = {wb::Shape{{"N", 3072}, {"C", 768}, {"gelu", 1}}},
      .full_bench_shapes = {wb::Shape{{"N", 6400}, {"C", 1600}, {"gelu", 1}}},
      .bytes =
          [](const wb::Shape& s) {
            const double n = s["N"], c = s["C"];
            return sizeof(T) * (n * c + 2 * n + 5 * c);  // W, b, y; x, r, gamma, beta, h
          },
      .flops = gemv_flops("C"),
      .peak = wb::Peak::FP32,
      .launch =
          [](LnGemvFn<T>* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<T>("x"), a.in<T>("r"), a.in<T>("gamma"), a.in<T>("beta"), a.in<T>("w"), a.in<T>("b"), a.out<T>("h"),
               a.out<T>("y"), a.i("N"), a.i("C"), a.dim("gelu") ? Epilogue::BiasGelu : Epilogue::Bias, kLnEps, st);
          },
      .checks = {.deterministic = 1},
      .refused = {{wb::Shape{{"N", 8}, {"C", 8193}, {"gelu", 0}}, "C > 8192 (the row is staged in shared memory)"}},
  };
}

// N = C rows (1 and 3 too), K = C or 4C, and tails: K % 8 != 0, K = 1, a prime N. The INT8
// form's (`int8_pieces`) add K = 16, 24: one int8 piece; a row of whole BF16 pieces that is not
// one of int8 pieces.
std::vector<wb::Shape> gemv_residual_shapes(bool int8_pieces) {
  std::vector<wb::Shape> out = n_by("K", {{1, 1}, {1, 7}, {7, 1}});
  const auto add = [&out](const std::vector<wb::Shape>& more) { out.insert(out.end(), more.begin(), more.end()); };
  if (int8_pieces) add(n_by("K", {{3, 16}, {3, 24}}));
  add(n_by("K", {{3, 64},
                 {3, 129},
                 {1, 6400},
                 {31, 4097},
                 {257, 129},
                 {768, 768},
                 {768, 3072},
                 {769, 1023},
                 {1600, 1600},
                 {1600, 6400},
                 {2304, 768},
                 {6400, 1600},
                 {50257, 64}}));
  return out;
}

template <class T>
wb::OpSpec<GemvResidualFn<T>> gemv_residual_op() {
  constexpr DType kT = wb::dtype_of<T>();
  return {
      .name = "gemv_residual",
      .dtype = kT == DType::F32 ? "f32" : "bf16",
      .title = "one token: y = res + W · x + b, the residual add in the GEMV's epilogue",
      .docs = kDocs,
      .tensors = residual_tensors(kT, {wb::input("w", {"N", "K"}, kT, wb::dist::uniform(-0.1, 0.1))}),
      .reference = [](const wb::RefCtx& r,
                      int64_t n) { r.expect("y", n, r.in("res").get(n) + (dot(r, 0, n) + r.in("b").get(n))); },
      .ref_rows = rows_of_n,
      .test_shapes = gemv_residual_shapes(false),
      .random_shapes = wb::shapes::random(3, {{"N", 5000}, {"K", 7000}}),
      .bench_shapes = {wb::Shape{{"N", 768}, {"K", 3072}}},
      .full_bench_shapes = {wb::Shape{{"N", 1600}, {"K", 6400}}},
      .bytes =
          [](const wb::Shape& s) {
            const double n = s["N"], k = s["K"];
            return sizeof(T) * (n * k + k + 3 * n);  // W, x; b, res, y
          },
      .flops = gemv_flops("K"),
      .peak = wb::Peak::FP32,
      .launch =
          [](GemvResidualFn<T>* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<T>("x"), a.in<T>("w"), a.in<T>("b"), a.in<T>("res"), a.out<T>("y"), a.i("N"), a.i("K"), st);
          },
      .checks = {.deterministic = 1},
  };
}

// The logits y (N) as the kernel stores them and their argmax, ties to the lower index.
template <class T>
std::pair<int64_t, double> argmax_ref(const wb::RefCtx& r, std::vector<double>* y) {
  const int64_t N = r["N"];
  int64_t best = 0;
  double best_v = -INFINITY;
  for (int64_t n = 0; n < N; ++n) {
    const double v = round_as<T>(dot(r, 0, n));  // exact: integer terms, |sum| < 2^24
    if (y) (*y)[n] = v;
    if (v > best_v) {  // a tie keeps the lower index
      best = n;
      best_v = v;
    }
  }
  return {best, best_v};
}

// Integer inputs in [-3, 3]: every product and every partial sum is an integer below 2^24,
// exact in FP32 whatever the order of the sum, so the logits as stored are known exactly and
// equal logits are real ties (many of them, once rounded to BF16): the lower-index rule is
// tested, not hoped for.
template <class T>
wb::OpSpec<GemvArgmaxFn<T>> gemv_argmax_op() {
  constexpr DType kT = wb::dtype_of<T>();
  return {
      .name = "gemv_argmax",
      .dtype = kT == DType::F32 ? "f32" : "bf16",
      .title = "one token's logits y = W · x and their argmax (equal values: the lower index), in one kernel",
      .docs = kDocs,
      .tensors = {wb::input("x", {"K"}, kT, wb::dist::ints(-3, 3)),
                  wb::input("w", {"N", "K"}, kT, wb::dist::ints(-3, 3)), wb::output("y", {"N"}, kT, wb::tol::exact()),
                  wb::output("index", {}, DType::I32, wb::tol::exact()),
                  wb::output("value", {}, DType::F32, wb::tol::exact())},
      .reference =
          [](const wb::RefCtx& r, int64_t) {
            std::vector<double> y(r["N"]);
            const auto [index, value] = argmax_ref<T>(r, &y);
            for (size_t n = 0; n < y.size(); ++n) r.expect("y", static_cast<int64_t>(n), y[n]);
            r.expect("index", 0, double(index));
            r.expect("value", 0, value);
          },
      .ref_rows = [](const wb::Shape&) { return int64_t{1}; },
      .test_shapes = n_grid("K", {1, 3, 2304, 6400, 50257}, {1, 7, 64, 768, 1600},
                            n_by("K", {{8193, 129}, {50257, 769}, {9, 8192}})),
      .random_shapes = wb::shapes::random(3, {{"N", 20000}, {"K", 2000}}),
      .bench_shapes = {wb::Shape{{"N", 50257}, {"K", 768}}},
      .full_bench_shapes = {wb::Shape{{"N", 50257}, {"K", 1600}}},
      .bytes =
          [](const wb::Shape& s) {
            const double n = s["N"], k = s["K"];
            return sizeof(T) * (n * k + k + n);
          },
      .flops = gemv_flops("K"),
      .peak = wb::Peak::FP32,
      .launch =
          [](GemvArgmaxFn<T>* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<T>("x"), a.in<T>("w"), a.out<T>("y"), a.out<int32_t>("index"), a.out<float>("value"), a.i("N"),
               a.i("K"), a.workspace(), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.output != "index" || d.inputs == nullptr || !d.got) return {};
        const int64_t got = static_cast<int64_t>(d.got(0)), N = (*d.inputs)["N"];
        if (got < 0 || got >= N) return "the index is outside 0 .. N - 1";
        const auto [index, value] = argmax_ref<T>(*d.inputs, nullptr);
        if (got > index && round_as<T>(dot(*d.inputs, 0, got)) == value) {
          return "row " + std::to_string(got) + " holds the largest value, but so does the lower row " +
                 std::to_string(index) + ": equal values go to the lower index (chapter 7's order)";
        }
        return {};
      },
      .refused = {{wb::Shape{{"N", 8}, {"K", 8193}}, "K > 8192 (the row is staged in shared memory)"}},
  };
}

// --- the fused decode step on INT8 weights (v6_fused_decode's W8A16 forms) ------------------
// No exercise: ln_gemv and gemv_residual with W held as q (N, K) int8 and one FP32 scale per
// row, as gemv_w8a16 holds it (the same inputs: q in [-127, 127], 127 * scale in [0.05, 0.1],
// so q * scale lies in +-0.1 as the BF16 ops' w), against float64 on q * scale.
// Tolerances: the BF16 ops' own. Each term x * q is exact in FP32 (8 bits of BF16 times 7 of
// q), the FP32 sum rounds as the BF16 op's sum of terms of the same size once scaled, and the
// scale adds one rounding; q and the scale are inputs here, not approximations of W (INT8's own
// error is the model's to bound: gpt2 --int8 --check, model_test.cu).
// No library reference: no library fuses a LayerNorm or a residual add into an INT8-weight
// GEMV. The benchmark shapes are those of ln_gemv/bf16 and gemv_residual/bf16, so the BF16 op's
// v6_fused_decode row on the same shape is the comparison (what reading 1 byte per weight buys).

// A failing y tested against the INT8 form's own mistake: the row's sum without its scale.
// `unscaled(n)` is the expected value with scale[n] left out; `raw` its tolerance.
std::string diagnose_unscaled(const wb::Diagnosis& d, const wb::Tolerance& raw,
                              const std::function<double(int64_t)>& unscaled) {
  return diagnose_y(d, [&](const wb::RefCtx&) {
    return std::vector<Mistake>{
        {unscaled, raw,
         "the output equals the sum of q[n][k] times x's elements without the scale: multiply row n's sum by "
         "scale[n] (once, after the dot product) before the bias"}};
  });
}

// ln_gemv's shapes, and rows of C % 16 != 0 int8 weights that are whole 16-byte pieces of BF16
// (C = 24: the BF16 op's 16-byte loads, the INT8 one's scalar path).
std::vector<wb::Shape> ln_gemv_w8a16_shapes() {
  return wb::shapes::each_with(n_grid("C", {1, 3, 2304, 6400}, {1, 7, 24, 64, 768, 1600}, ln_gemv_more_shapes()),
                               "gelu", {0, 1});
}

wb::OpSpec<LnGemvW8Fn> ln_gemv_w8a16_op() {
  const auto bf16_op = ln_gemv_op<bf16>();  // its rows, random and benchmark shapes, FLOPs and refusals
  return {
      .name = "ln_gemv_w8a16",
      .dtype = "bf16",
      .title =
          "one token, INT8 weights: h = x + r, y = [gelu_tanh](s · (q · LayerNorm(h)) + b), q [N, C] int8, "
          "s [N] FP32",
      .docs = kDocs,
      .tensors = ln_gemv_tensors(DType::BF16, w8_weights("C")),
      .reference =
          [](const wb::RefCtx& r, int64_t n) {
            if (n == 0) expect_h<bf16>(r);
            const double acc = r.in("scale").get(n) * ln_dot<bf16>(r, n, "q");  // the scale out of the sum: exact
            r.expect("y", n, apply(r["gelu"] ? Epilogue::BiasGelu : Epilogue::Bias, acc, r.in("b").get(n)));
          },
      .ref_rows = bf16_op.ref_rows,
      .test_shapes = ln_gemv_w8a16_shapes(),
      .random_shapes = bf16_op.random_shapes,
      .bench_shapes = bf16_op.bench_shapes,
      .full_bench_shapes = bf16_op.full_bench_shapes,
      .bytes =
          [](const wb::Shape& s) {
            const double n = s["N"], c = s["C"];
            return n * c + 4 * n + 2 * (2 * n + 5 * c);  // q, scale; b, y; x, r, gamma, beta, h
          },
      .flops = bf16_op.flops,
      .peak = bf16_op.peak,
      .launch =
          [](LnGemvW8Fn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<bf16>("x"), a.in<bf16>("r"), a.in<bf16>("gamma"), a.in<bf16>("beta"), a.in<int8_t>("q"),
               a.in<float>("scale"), a.in<bf16>("b"), a.out<bf16>("h"), a.out<bf16>("y"), a.i("N"), a.i("C"),
               a.dim("gelu") ? Epilogue::BiasGelu : Epilogue::Bias, kLnEps, st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.inputs == nullptr) return {};
        const wb::RefCtx& r = *d.inputs;
        const auto raw = wb::tolerance_for(DType::BF16, r["C"] + 1, 0.3 * 127);  // terms up to 127 times larger
        return diagnose_unscaled(d, raw, [&r](int64_t n) {
          return apply(r["gelu"] ? Epilogue::BiasGelu : Epilogue::Bias, ln_dot<bf16>(r, n, "q"), r.in("b").get(n));
        });
      },
      .refused = bf16_op.refused,
  };
}

wb::OpSpec<GemvResidualW8Fn> gemv_residual_w8a16_op() {
  const auto bf16_op = gemv_residual_op<bf16>();  // its rows, random and benchmark shapes and FLOPs
  return {
      .name = "gemv_residual_w8a16",
      .dtype = "bf16",
      .title =
          "one token, INT8 weights: y = res + s · (q · x) + b, q [N, K] int8, s [N] FP32, the residual add in "
          "the epilogue",
      .docs = kDocs,
      .tensors = residual_tensors(DType::BF16, w8_weights("K")),
      .reference =
          [](const wb::RefCtx& r, int64_t n) {
            r.expect("y", n, r.in("res").get(n) + (r.in("scale").get(n) * dot_q(r, n) + r.in("b").get(n)));
          },
      .ref_rows = bf16_op.ref_rows,
      .test_shapes = gemv_residual_shapes(true),
      .random_shapes = bf16_op.random_shapes,
      .bench_shapes = bf16_op.bench_shapes,
      .full_bench_shapes = bf16_op.full_bench_shapes,
      .bytes =
          [](const wb::Shape& s) {
            const double n = s["N"], k = s["K"];
            return n * k + 4 * n + 2 * (k + 3 * n);  // q, scale; x; b, res, y
          },
      .flops = bf16_op.flops,
      .peak = bf16_op.peak,
      .launch =
          [](GemvResidualW8Fn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<bf16>("x"), a.in<int8_t>("q"), a.in<float>("scale"), a.in<bf16>("b"), a.in<bf16>("res"),
               a.out<bf16>("y"), a.i("N"), a.i("K"), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.inputs == nullptr) return {};
        const wb::RefCtx& r = *d.inputs;
        const auto raw = wb::tolerance_for(DType::BF16, r["K"] + 2, 0.1 * 127);  // terms up to 127 times larger
        return diagnose_unscaled(d, raw,
                                 [&r](int64_t n) { return r.in("res").get(n) + (dot_q(r, n) + r.in("b").get(n)); });
      },
  };
}

template <class T>
void add_fused_decode() {
  wb::add_op(ln_gemv_op<T>());
  wb::add_op(gemv_residual_op<T>());
  wb::add_op(gemv_argmax_op<T>());
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
  wb::add_op(gemv_w8a16_op("gemv_w8a16", Epilogue::None));
  wb::add_op(gemv_w8a16_op("gemv_w8a16_bias", Epilogue::Bias));
  wb::add_op(gemv_w8a16_op("gemv_w8a16_bias_gelu", Epilogue::BiasGelu));
  add_fused_decode<bf16>();
  add_fused_decode<float>();
  wb::add_op(ln_gemv_w8a16_op());
  wb::add_op(gemv_residual_w8a16_op());
}

}  // namespace ch09
