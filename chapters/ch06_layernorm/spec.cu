// Chapter 6's ops, declared once (harness/declare/op.cuh).
//
//   layernorm/f32            y = (x - mean) * rstd * gamma + beta; mean, rstd per row     ex1
//   residual_layernorm/bf16  h = bf16(x + r); y = LayerNorm(h); FP32 mean, rstd          ex2, ex4
//   residual_rmsnorm/bf16    h = bf16(x + r); y = h * rsqrt(mean(h^2) + eps) * gamma      ex3
//
// Rows are N, channels C, each row `ld` elements after the previous (ld = C + pad).
// Exactness rule for h: it must equal the BF16 rounding (nearest even) of the FP32 sum
// x + r, bit for bit: that is what every kernel computes, and what the next layer reads.
// The statistics are computed from h as rounded.
//
// Beyond the catalogue:
//   * vector tails: rows whose stride is a multiple of 8 elements (16-byte aligned in BF16
//     and FP32) while C is not (C = 769 with ld = 776 ...), and C a multiple of 8 with ld a
//     multiple of 4 only or of 2 only: a 16-byte path chosen on one of the two conditions
//     meets the other;
//   * a large case per op (the "large_rows" inputs, tag "large"): 524,544 rows of 4,096, so
//     that the last ~250 rows start past element 2^31: a row offset n * ld kept in an int
//     wraps. 17.2 GB per case (x, r, h, y in BF16; x, y in FP32); uniform inputs, which are
//     drawn fast;
//   * race shapes (OpSpec::race_shapes): 20,011 rows, so that every block of a grid that fits
//     on the GPU at once (a block per row: at most 148 x 32 of them; a warp per row: 148 x 64
//     warps) normalises at least two: a persistent kernel that reuses its shared reduction
//     in the next row without a barrier meets the race pass.
#include <cmath>

#include "ch06.cuh"
#include "declare/op.cuh"

namespace ch06 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch06-layernorm.md";
constexpr double kU32 = 1.0 / 16777216.0;  // FP32 unit roundoff

// The inputs' mean and spread, as the shapes of the large-mean sets declare them; the FP32
// statistics lose digits in proportion to |mean| / std, and the tolerances say so.
double offset(const wb::Shape& s) { return std::fabs(s.param_or("xmean", 0.0)) / s.param_or("xstd", 1.0); }

wb::Tol y_tol() {
  return {[](const wb::Shape& s, DType t) {
            const double sq = std::sqrt(double(std::max<int64_t>(s["C"], 1)));
            const double stats = 8 * kU32 * sq * (offset(s) + 3) * 1.5;
            return wb::Tolerance{stats + (t == DType::F32 ? 1e-5 : 4e-3), 2 * wb::unit_roundoff(t) + 8 * kU32 * sq};
          },
          "output rounding plus FP32 statistics error (grows with sqrt(C) and |mean|/std)"};
}
wb::Tol mean_tol() {
  return {[](const wb::Shape& s, DType) {
            const double sq = std::sqrt(double(std::max<int64_t>(s["C"], 1)));
            return wb::Tolerance{8 * kU32 * sq * (std::fabs(s.param_or("xmean", 0.0)) + 3 * s.param_or("xstd", 1.0)),
                                 8 * kU32 * sq};
          },
          "an FP32 sum over C"};
}
wb::Tol rstd_tol() {
  return {[](const wb::Shape& s, DType) {
            const double sq = std::sqrt(double(std::max<int64_t>(s["C"], 1)));
            return wb::Tolerance{0, 1e-4 + 16 * kU32 * sq * (1 + offset(s))};
          },
          "FP32 two-pass variance"};
}

void pitched(wb::TensorSpec& t) {
  t.dims = {"N", "ld"};
  t.view = {"N", "C"};
}

std::vector<wb::Shape> test_shapes() {
  std::vector<wb::Shape> out;
  for (int64_t c : {1, 3, 127, 768, 769, 1000, 1024, 4096, 5120, 8192, 12288}) {
    for (int64_t n : {1, 33}) out.push_back(wb::Shape{{"N", n}, {"C", c}, {"pad", 0}});
    out.push_back(wb::Shape{{"N", 7}, {"C", c}, {"pad", 3}});  // pitched, rows not 16-byte aligned
    out.push_back(wb::Shape{{"N", 5}, {"C", c}, {"pad", 8}});  // pitched, rows aligned
  }
  for (int64_t n : {1000, 16384}) out.push_back(wb::Shape{{"N", n}, {"C", 1024}, {"pad", 0}});
  // Vector tails. ld a multiple of 8, C not: C = 769 + 7, 1003 + 5, 13 + 3, 4095 + 1, 4099 + 5.
  for (auto [c, pad] :
       std::initializer_list<std::pair<int64_t, int64_t>>{{769, 7}, {1003, 5}, {13, 3}, {4095, 1}, {4099, 5}}) {
    out.push_back(wb::Shape{{"N", 9}, {"C", c}, {"pad", pad}});
  }
  // The reverse: C a multiple of 8, ld a multiple of 4 but not 8 (rows 8-byte aligned in
  // BF16, 16-byte in FP32), and a multiple of 2 only.
  for (auto [c, pad] : std::initializer_list<std::pair<int64_t, int64_t>>{{1024, 4}, {768, 2}, {4096, 12}}) {
    out.push_back(wb::Shape{{"N", 9}, {"C", c}, {"pad", pad}});
  }
  return out;
}

// The large case: 524,544 rows of 4,096, the last row starting at element 2,148,528,128.
const wb::Shape kLargeRows = wb::Shape{{"N", 524544}, {"C", 4096}, {"pad", 0}}.tag("large");

// The race pass: 20,011 rows of 768, and of 1,000 in rows of 1,003 (a tail).
std::vector<wb::Shape> race_shapes() {
  return {wb::Shape{{"N", 20011}, {"C", 768}, {"pad", 0}}, wb::Shape{{"N", 20011}, {"C", 1000}, {"pad", 3}}};
}

std::vector<wb::InputSet> large_mean_sets() {
  auto shapes = [](double mean) {
    std::vector<wb::Shape> s;
    for (int64_t c : {768, 4096}) {
      s.push_back(wb::Shape{{"N", 64}, {"C", c}, {"pad", 0}}.set_param("xmean", mean).set_param("xstd", 1));
    }
    return s;
  };
  return {
      {"mean_1000", {{"x", wb::dist::normal(1000, 1)}, {"r", wb::dist::normal(0, 0.5)}}, shapes(1000)},
      {"mean_minus_1e4", {{"x", wb::dist::normal(-1e4, 1)}, {"r", wb::dist::normal(0, 0.5)}}, shapes(-1e4)},
      {"large_rows", {{"x", wb::dist::uniform(-2, 2)}, {"r", wb::dist::uniform(-1, 1)}}, {kLargeRows}},
  };
}

void derive(wb::Shape& s) { s.set("ld", s["C"] + s["pad"]); }

// Three seeded random shapes: up to 300 rows of up to 3000 channels, padded by 0 to 9.
std::vector<wb::Shape> random_shapes(wb::Rng& rng) {
  auto s = wb::shapes::random(3, {{"N", 300}, {"C", 3000}})(rng);
  for (auto& x : s) x.set("pad", rng.range(0, 9));
  return s;
}

// The FP32 statistics of a row of values v[0..C), in float64.
struct Stats {
  double mean, rstd;
};
Stats stats(const std::vector<double>& v, bool rms) {
  const double c = static_cast<double>(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / c;
  double sq = 0;
  for (double x : v) sq += rms ? x * x : (x - mean) * (x - mean);
  return {mean, 1.0 / std::sqrt(sq / c + double(kEps))};
}

double bf16_round(double v) { return wb::bf16_to_float(wb::float_to_bf16(static_cast<float>(v))); }

// Row `n` of h (as rounded) for the residual ops.
std::vector<double> residual_row(const wb::RefCtx& r, int64_t n) {
  const int64_t C = r["C"], ld = r["ld"];
  std::vector<double> h(C);
  for (int64_t c = 0; c < C; ++c) {
    const float sum = static_cast<float>(r.in("x").get(n * ld + c)) + static_cast<float>(r.in("r").get(n * ld + c));
    h[c] = bf16_round(sum);
    r.expect("h", n * C + c, h[c]);
  }
  return h;
}

// y, mean and rstd of LayerNorm row n from the row's values v (x, or h as rounded), in float64.
void expect_layernorm(const wb::RefCtx& r, int64_t n, const std::vector<double>& v) {
  const int64_t C = r["C"];
  const Stats st = stats(v, false);
  for (int64_t c = 0; c < C; ++c) {
    r.expect("y", n * C + c, (v[c] - st.mean) * st.rstd * r.in("gamma").get(c) + r.in("beta").get(c));
  }
  r.expect("mean", n, st.mean);
  r.expect("rstd", n, st.rstd);
}

// The residual ops' tensors, in this order: the pitched rows x and r in, gamma, the op's
// `more_in` (LayerNorm's beta); the pitched rows h (exact) and y out, the op's `more_out`
// (LayerNorm's mean), rstd.
std::vector<wb::TensorSpec> residual_tensors(std::vector<wb::TensorSpec> more_in,
                                             std::vector<wb::TensorSpec> more_out) {
  auto x = wb::input("x", {}, DType::BF16, wb::dist::normal(0, 1));
  auto r = wb::input("r", {}, DType::BF16, wb::dist::normal(0, 1));
  auto h = wb::output("h", {}, DType::BF16, wb::tol::exact());
  auto y = wb::output("y", {}, DType::BF16, y_tol());
  for (auto* p : {&x, &r, &h, &y}) pitched(*p);
  std::vector<wb::TensorSpec> t = {x, r, wb::input("gamma", {"C"}, DType::BF16, wb::dist::uniform(0.5, 1.5))};
  t.insert(t.end(), more_in.begin(), more_in.end());
  t.insert(t.end(), {h, y});
  t.insert(t.end(), more_out.begin(), more_out.end());
  t.push_back(wb::output("rstd", {"N"}, DType::F32, rstd_tol()));
  return t;
}

const int64_t kBenchRows[][2] = {{16384, 4096}, {4096, 8192}, {32768, 1024}, {1, 4096}};

std::vector<wb::Shape> bench(bool full) {
  std::vector<wb::Shape> s;
  for (const auto& [n, c] : kBenchRows) {
    const bool headline = n == 16384 || n == 1;
    if (headline != full) s.push_back(wb::Shape{{"N", n}, {"C", c}, {"pad", 0}});
  }
  return s;
}

double norm_bytes(const wb::Shape& s, int row_tensors, int vectors, int stats) {
  return 2.0 * row_tensors * s["N"] * s["C"] + 2.0 * vectors * s["C"] + 4.0 * stats * s["N"];
}

// What the chapter's three ops share: the docs, rows of C channels pitched by ld, one
// reference row per row, the test, random and race shapes above, the FP32 roof, and the
// same bits on a repeated run. Each op declares the rest.
template <class Fn>
wb::OpSpec<Fn> row_op(wb::OpSpec<Fn> op) {
  op.docs = kDocs;
  op.derive = derive;
  op.ref_rows = [](const wb::Shape& s) { return s["N"]; };
  op.test_shapes = test_shapes();
  op.random_shapes = random_shapes;
  op.race_shapes = race_shapes();
  op.peak = wb::Peak::FP32;
  op.checks = {.deterministic = 1};
  return op;
}

wb::OpSpec<LayerNormF32Fn> layernorm_f32() {
  auto x = wb::input("x", {}, DType::F32, wb::dist::normal(0, 1));
  auto y = wb::output("y", {}, DType::F32, y_tol());
  pitched(x);
  pitched(y);
  return row_op<LayerNormF32Fn>({
      .name = "layernorm",
      .dtype = "f32",
      .title = "LayerNorm forward, FP32, two-pass statistics",
      .tensors = {x, wb::input("gamma", {"C"}, DType::F32, wb::dist::uniform(0.5, 1.5)),
                  wb::input("beta", {"C"}, DType::F32, wb::dist::uniform(-1, 1)), y,
                  wb::output("mean", {"N"}, DType::F32, mean_tol()), wb::output("rstd", {"N"}, DType::F32, rstd_tol())},
      .reference =
          [](const wb::RefCtx& r, int64_t n) {
            const int64_t C = r["C"], ld = r["ld"];
            std::vector<double> v(C);
            for (int64_t c = 0; c < C; ++c) v[c] = r.in("x").get(n * ld + c);
            expect_layernorm(r, n, v);
          },
      .input_sets = {{"mean_1000",
                      {{"x", wb::dist::normal(1000, 1)}},
                      {wb::Shape{{"N", 64}, {"C", 4096}, {"pad", 0}}.set_param("xmean", 1000).set_param("xstd", 1)}},
                     {"mean_minus_1e4",
                      {{"x", wb::dist::normal(-1e4, 1)}},
                      {wb::Shape{{"N", 64}, {"C", 768}, {"pad", 0}}.set_param("xmean", -1e4).set_param("xstd", 1)}},
                     {"large_rows", {{"x", wb::dist::uniform(-2, 2)}}, {kLargeRows}}},
      .bench_shapes = {wb::Shape{{"N", 8192}, {"C", 4096}, {"pad", 0}}},
      .bytes = [](const wb::Shape& s) { return 2 * norm_bytes(s, 2, 2, 2); },
      .flops = [](const wb::Shape& s) { return 8.0 * s["N"] * s["C"]; },
      .launch =
          [](LayerNormF32Fn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("x"), a.in<float>("gamma"), a.in<float>("beta"), a.out<float>("y"), a.out<float>("mean"),
               a.out<float>("rstd"), a.i("N"), a.i("C"), a.i("ld"), kEps, st);
          },
  });
}

wb::OpSpec<ResidualLayerNormFn> residual_layernorm() {
  return row_op<ResidualLayerNormFn>({
      .name = "residual_layernorm",
      .dtype = "bf16",
      .title = "h = x + r; y = LayerNorm(h) (BF16, FP32 statistics)",
      .tensors = residual_tensors({wb::input("beta", {"C"}, DType::BF16, wb::dist::uniform(-1, 1))},
                                  {wb::output("mean", {"N"}, DType::F32, mean_tol())}),
      .reference = [](const wb::RefCtx& r, int64_t n) { expect_layernorm(r, n, residual_row(r, n)); },
      .input_sets = large_mean_sets(),
      .bench_shapes = bench(false),
      .full_bench_shapes = bench(true),
      .bytes = [](const wb::Shape& s) { return norm_bytes(s, 4, 2, 2); },
      .flops = [](const wb::Shape& s) { return 8.0 * s["N"] * s["C"]; },
      .launch =
          [](ResidualLayerNormFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<bf16>("x"), a.in<bf16>("r"), a.in<bf16>("gamma"), a.in<bf16>("beta"), a.out<bf16>("h"),
               a.out<bf16>("y"), a.out<float>("mean"), a.out<float>("rstd"), a.i("N"), a.i("C"), a.i("ld"), kEps, st);
          },
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.output == "h" && d.code == wb::Code::Unwritten)
          return "h is never written: the fused kernel must store the new residual h = x + r as well as y";
        if (d.output == "y" && d.shape.param_or("xmean", 0) != 0) {
          return "wrong only when the inputs have a large mean: catastrophic cancellation in a one-pass variance "
                 "E[x^2] - E[x]^2; compute the mean first, then the sum of (x - mean)^2 (two passes over registers)";
        }
        return {};
      },
  });
}

wb::OpSpec<ResidualRmsNormFn> residual_rmsnorm() {
  return row_op<ResidualRmsNormFn>({
      .name = "residual_rmsnorm",
      .dtype = "bf16",
      .title = "h = x + r; y = h * rsqrt(mean(h^2) + eps) * gamma (BF16)",
      .tensors = residual_tensors({}, {}),
      .reference =
          [](const wb::RefCtx& r, int64_t n) {
            const int64_t C = r["C"];
            const auto h = residual_row(r, n);
            const Stats st = stats(h, true);
            for (int64_t c = 0; c < C; ++c) r.expect("y", n * C + c, h[c] * st.rstd * r.in("gamma").get(c));
            r.expect("rstd", n, st.rstd);
          },
      .input_sets = {{"large_rows", {{"x", wb::dist::uniform(-2, 2)}, {"r", wb::dist::uniform(-1, 1)}}, {kLargeRows}}},
      .bench_shapes = {wb::Shape{{"N", 16384}, {"C", 4096}, {"pad", 0}}},
      .full_bench_shapes = {wb::Shape{{"N", 4096}, {"C", 8192}, {"pad", 0}},
                            wb::Shape{{"N", 32768}, {"C", 1024}, {"pad", 0}}},
      .bytes = [](const wb::Shape& s) { return norm_bytes(s, 4, 1, 1); },
      .flops = [](const wb::Shape& s) { return 5.0 * s["N"] * s["C"]; },
      .launch =
          [](ResidualRmsNormFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<bf16>("x"), a.in<bf16>("r"), a.in<bf16>("gamma"), a.out<bf16>("h"), a.out<bf16>("y"),
               a.out<float>("rstd"), a.i("N"), a.i("C"), a.i("ld"), kEps, st);
          },
  });
}

}  // namespace

WB_OPS(ch06) { wb::add_ops(layernorm_f32(), residual_layernorm(), residual_rmsnorm()); }

}  // namespace ch06
