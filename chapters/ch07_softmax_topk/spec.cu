// Chapter 7's ops, declared once (harness/declare/op.cuh).
//
//   softmax/f32              probs = softmax(x), row by row                        ex1, ex2
//   topk/f32                 the k largest logits per row, sorted, and their indices  ex3
//   softmax_topk/f32         the k largest probabilities and their indices         ex4
//   softmax_topk_probs/f32   the same, and the whole probability row               ex4
//
// B rows of V logits, packed. Order: by logit, largest first; equal logits by the lower
// index. A row of -inf only: probabilities 0, top-k indices 0..k-1 (see ch07.cuh).
//
// Beyond the catalogue:
//   * logits at the edge of the range: every logit far below zero (normal(-1000, 4): a max
//     started at 0 makes every exp underflow), or -inf everywhere but one such logit; far
//     above zero (logits_1e4), masked rows and all--inf rows (edge_rows);
//   * vector tails: V = 1002, 4100, 32003 on several rows (row starts 8-byte aligned only,
//     a multiple of 4 but not of 8, and odd);
//   * a large case per op (the "large_rows" inputs, tag "large"): 8,193 rows of 262,144,
//     the last row starting at element 2^31, so a row offset b * V kept in an int wraps.
//     8.6 GB of logits (17.2 GB with the probabilities); uniform logits, drawn fast;
//   * race shapes (OpSpec::race_shapes): 20,011 short rows (every block of a grid that fits
//     on the GPU at once handles two rows or more) and 64 long ones (two chunks or more).
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "ch07.cuh"
#include "declare/op.cuh"

namespace ch07 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch07-softmax-topk.md";
constexpr double kU32 = 1.0 / 16777216.0;  // FP32 unit roundoff

// Probabilities: exp of (x - max) in FP32 (exact subtraction near the max, one rounding
// further away, ~|x - max| * u), divided by an FP32 sum of V terms.
wb::Tol prob_tol() {
  return {[](const wb::Shape& s, DType) {
            return wb::Tolerance{1e-33, kU32 * (128 + 4 * std::sqrt(double(s["V"])))};
          },
          "FP32 exp and an FP32 sum over V (relative 128u + 4u*sqrt(V))"};
}

// --- the float64 reference, one row at a time -------------------------------------------

struct Row {
  std::vector<double> x;
  double max = -INFINITY, sum = 0;  // sum of exp(x - max); 0 for a row of -inf
  double prob(int64_t v) const { return sum > 0 ? std::exp(x[v] - max) / sum : 0.0; }
};

Row read_row(const wb::RefCtx& r, int64_t b) {
  const int64_t V = r["V"];
  Row row;
  row.x.resize(V);
  for (int64_t v = 0; v < V; ++v) row.x[v] = r.in("x").get(b * V + v);
  for (double x : row.x) row.max = std::max(row.max, x);
  if (row.max != -INFINITY) {
    for (double x : row.x) row.sum += std::exp(x - row.max);
  }
  return row;
}

// The first k indices in the chapter's order: larger logit first, then lower index.
std::vector<int64_t> top_indices(const Row& row, int64_t k) {
  std::vector<int64_t> idx(row.x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return row.x[a] != row.x[b] ? row.x[a] > row.x[b] : a < b; });
  idx.resize(k);
  return idx;
}

void expect_probs(const wb::RefCtx& r, const Row& row, int64_t b) {
  const int64_t V = r["V"];
  for (int64_t v = 0; v < V; ++v) r.expect("probs", b * V + v, row.prob(v));
}

void expect_topk(const wb::RefCtx& r, const Row& row, int64_t b, bool probabilities) {
  const int64_t k = r["k"];
  const auto idx = top_indices(row, k);
  for (int64_t j = 0; j < k; ++j) {
    r.expect("indices", b * k + j, double(idx[j]));
    r.expect("values", b * k + j, probabilities ? row.prob(idx[j]) : row.x[idx[j]]);
  }
}

// --- shapes -------------------------------------------------------------------------------

const int64_t kVocabs[] = {1, 2, 7, 31, 1000, 32000, 50257, 128256, 151936, 262144};

std::vector<wb::Shape> softmax_shapes() {
  std::vector<wb::Shape> out;
  for (int64_t V : kVocabs) {
    out.push_back(wb::Shape{{"B", 1}, {"V", V}});
    out.push_back(wb::Shape{{"B", V > 100000 ? 2 : 3}, {"V", V}});
  }
  out.push_back(wb::Shape{{"B", 256}, {"V", 1000}});
  out.push_back(wb::Shape{{"B", 64}, {"V", 32000}});
  out.push_back(wb::Shape{{"B", 33}, {"V", 50257}});
  for (int64_t V : {1002, 4100, 32003}) out.push_back(wb::Shape{{"B", 5}, {"V", V}});  // vector tails
  return out;
}

std::vector<wb::Shape> topk_shapes() {
  std::vector<wb::Shape> out;
  for (int64_t V : kVocabs) {
    std::vector<int64_t> ks;
    for (int64_t k : {1, 5, 50, 64}) {
      if (k <= V) ks.push_back(k);
    }
    if (V <= kMaxK && std::find(ks.begin(), ks.end(), V) == ks.end()) ks.push_back(V);  // k = V
    for (int64_t k : ks) out.push_back(wb::Shape{{"B", V > 100000 ? 2 : 3}, {"V", V}, {"k", k}});
  }
  for (auto [B, V, k] : std::initializer_list<std::array<int64_t, 3>>{{64, 32000, 50},
                                                                      {256, 1000, 5},
                                                                      {17, 128256, 64},
                                                                      {1, 262144, 64},
                                                                      {1, 128256, 50},
                                                                      {130, 7, 7},
                                                                      {5, 1002, 50},
                                                                      {5, 4100, 64},
                                                                      {5, 32003, 5}}) {  // the last three: vector tails
    out.push_back(wb::Shape{{"B", B}, {"V", V}, {"k", k}});
  }
  return out;
}

// The race pass: 20,011 rows of 500 (a block per row: at most 148 x 32 resident blocks; a
// warp per row: 148 x 64 warps) and 64 rows of 262,144 (a row split over chunks).
std::vector<wb::Shape> race_shapes(bool with_k) {
  wb::Shape many{{"B", 20011}, {"V", 500}}, long_rows{{"B", 64}, {"V", 262144}};
  if (with_k) {
    many.set("k", 50);
    long_rows.set("k", 64);
  }
  return {many, long_rows};
}

// Three seeded random shapes: up to 40 rows of up to 70000 logits, k up to 64.
std::vector<wb::Shape> random_topk_shapes(wb::Rng& rng) {
  std::vector<wb::Shape> out;
  for (int i = 0; i < 3; ++i) {
    const int64_t V = rng.range(1, 70000);
    out.push_back(wb::Shape{{"B", rng.range(1, 40)}, {"V", V}, {"k", rng.range(1, std::min<int64_t>(V, kMaxK))}});
  }
  return out;
}
std::vector<wb::Shape> random_softmax_shapes(wb::Rng& rng) {
  auto s = random_topk_shapes(rng);
  std::vector<wb::Shape> out;
  for (const auto& x : s) out.push_back(wb::Shape{{"B", x["B"]}, {"V", x["V"]}});
  return out;
}

// Row patterns for the edge cases, by row number: a row of -inf only; -inf but for one
// logit; one value repeated; values from {-inf, 0, 1} (ties among masked and unmasked).
wb::Dist edge_rows() {
  return wb::dist::custom("rows: all -inf / one finite / all equal / {-inf, 0, 1}",
                          [](wb::HostTensor& t, const wb::Shape& s, wb::Rng& rng) {
                            const int64_t V = s["V"], B = s["B"];
                            for (int64_t b = 0; b < B; ++b) {
                              const int64_t kind = b % 4, hot = rng.range(0, V - 1);
                              const double level = rng.uniform(-3, 3);
                              for (int64_t v = 0; v < V; ++v) {
                                double x = -INFINITY;
                                if (kind == 1 && v == hot) x = rng.uniform(-5, 5);
                                if (kind == 2) x = level;
                                if (kind == 3) x = std::array<double, 3>{-INFINITY, 0.0, 1.0}[rng.range(0, 2)];
                                t.set(b * V + v, x);
                              }
                            }
                          });
}

// -inf everywhere but one logit drawn from normal(-1000, 4), at a random place in each row.
wb::Dist one_far_below() {
  return wb::dist::custom("-inf everywhere but one logit ~ normal(-1000, 4) per row",
                          [](wb::HostTensor& t, const wb::Shape& s, wb::Rng& rng) {
                            const int64_t V = s["V"], B = s["B"];
                            for (int64_t b = 0; b < B; ++b) {
                              const int64_t hot = rng.range(0, V - 1);
                              for (int64_t v = 0; v < V; ++v) t.set(b * V + v, -INFINITY);
                              t.set(b * V + hot, -1000.0 + rng.uniform(-8, 8));
                            }
                          });
}

// The large case: 8,193 rows of 262,144 logits; row 8,192 starts at element 2^31.
wb::Shape large_rows(bool with_k) {
  wb::Shape s{{"B", 8193}, {"V", 262144}};
  if (with_k) s.set("k", 64);
  return s.tag("large");
}

std::vector<wb::InputSet> input_sets(bool with_k) {
  auto shapes = [&](double scale, bool ties) {
    std::vector<wb::Shape> s;
    for (auto [V, k] : std::initializer_list<std::array<int64_t, 2>>{{7, 5}, {1000, 64}, {50257, 50}, {128256, 5}}) {
      wb::Shape x{{"B", 8}, {"V", V}};
      if (with_k) x.set("k", k);
      if (scale != 0) x.set_param("scale", scale);
      if (ties) x.set_param("ties", 1);
      s.push_back(x);
    }
    return s;
  };
  return {
      {"logits_1e4", {{"x", wb::dist::normal(1e4, 4)}}, shapes(1e4, false)},  // exp(x) overflows FP32
      {"wide_1e4", {{"x", wb::dist::uniform(-1e4, 1e4)}}, shapes(1e4, false)},
      {"ties", {{"x", wb::dist::ties(6, -3, 3)}}, shapes(0, true)},
      {"masked", {{"x", wb::dist::normal(0, 2).with_neg_inf(0.6)}}, shapes(0, false)},
      {"edge_rows", {{"x", edge_rows()}}, shapes(0, true)},
      {"far_below_zero", {{"x", wb::dist::normal(-1000, 4)}}, shapes(0, false)},
      {"one_far_below_among_neg_inf", {{"x", one_far_below()}}, shapes(0, false)},
      {"large_rows", {{"x", wb::dist::uniform(-8, 8)}}, {large_rows(with_k)}},
  };
}

// What a failure most likely means, from the shape and the output that failed.
std::string diagnose(const wb::Diagnosis& d) {
  if ((d.code == wb::Code::NaN || d.code == wb::Code::Wrong) && d.shape.param_or("scale", 0) >= 1e4) {
    return "fails on logits of size 1e4: exp(1e4) is +inf in FP32. Subtract the row's max before exp (section "
           "\"Why softmax needs the max\")";
  }
  if (d.output == "indices" && d.shape.param_or("ties", 0) != 0) {
    return "wrong indices where logits are equal: order equal logits by the LOWER index (section \"Ties\")";
  }
  if (d.code == wb::Code::Wrong && d.shape["V"] > 4096 && d.output != "probs") {
    return "right on short rows, wrong on long ones: is every part of a row covered (the last partial chunk), and "
           "is every partial result merged after a barrier?";
  }
  return {};
}

std::vector<wb::Refusal> refusals(bool with_k) {
  if (!with_k) return {{wb::Shape{{"B", 0}, {"V", 7}}, "B < 1"}};
  return {{wb::Shape{{"B", 2}, {"V", 7}, {"k", 8}}, "k > V"},
          {wb::Shape{{"B", 2}, {"V", 1000}, {"k", 0}}, "k < 1"},
          {wb::Shape{{"B", 2}, {"V", 1000}, {"k", kMaxK + 1}}, "k > kMaxK"}};
}

wb::TensorSpec logits() { return wb::input("x", {"B", "V"}, DType::F32, wb::dist::normal(0, 2)); }
wb::TensorSpec probs() { return wb::output("probs", {"B", "V"}, DType::F32, prob_tol()); }
wb::TensorSpec indices() { return wb::output("indices", {"B", "k"}, DType::I32, wb::tol::exact()); }

wb::Shape bs(int64_t B, int64_t V, int64_t k = 0) {
  wb::Shape s{{"B", B}, {"V", V}};
  if (k) s.set("k", k);
  return s;
}

wb::OpSpec<SoftmaxFn> softmax() {
  return {
      .name = "softmax",
      .dtype = "f32",
      .title = "softmax of each row of logits",
      .docs = kDocs,
      .tensors = {logits(), probs()},
      .reference = [](const wb::RefCtx& r, int64_t b) { expect_probs(r, read_row(r, b), b); },
      .ref_rows = [](const wb::Shape& s) { return s["B"]; },
      .test_shapes = softmax_shapes(),
      .random_shapes = random_softmax_shapes,
      .input_sets = input_sets(false),
      .race_shapes = race_shapes(false),
      .bench_shapes = {bs(64, 128256)},
      .full_bench_shapes = {bs(256, 128256), bs(1, 128256)},
      .bytes = [](const wb::Shape& s) { return 8.0 * s["B"] * s["V"]; },
      .peak = wb::Peak::FP32,
      .launch = [](SoftmaxFn* fn, const wb::Args& a,
                   cudaStream_t st) { fn(a.in<float>("x"), a.out<float>("probs"), a.i("B"), a.i("V"), st); },
      .checks = {.deterministic = 1},
      .diagnose = diagnose,
      .refused = refusals(false),
  };
}

// topk/f32 and softmax_topk/f32 share a launcher type; `probabilities` picks the values.
wb::OpSpec<TopKFn> topk(bool probabilities) {
  return {
      .name = probabilities ? "softmax_topk" : "topk",
      .dtype = "f32",
      .title = probabilities ? "the k most probable tokens of each row (softmax + top-k, logits read once)"
                             : "the k largest logits of each row, sorted, with their indices",
      .docs = kDocs,
      .tensors = {logits(),
                  probabilities ? wb::output("values", {"B", "k"}, DType::F32, prob_tol())
                                : wb::output("values", {"B", "k"}, DType::F32, wb::tol::exact()),
                  indices()},
      .reference = [probabilities](const wb::RefCtx& r,
                                   int64_t b) { expect_topk(r, read_row(r, b), b, probabilities); },
      .ref_rows = [](const wb::Shape& s) { return s["B"]; },
      .test_shapes = topk_shapes(),
      .random_shapes = random_topk_shapes,
      .input_sets = input_sets(true),
      .race_shapes = race_shapes(true),
      .bench_shapes = probabilities ? std::vector<wb::Shape>{bs(1, 128256, 50), bs(64, 128256, 50), bs(256, 128256, 50),
                                                             bs(64, 262144, 64)}
                                    : std::vector<wb::Shape>{bs(64, 128256, 50)},
      .full_bench_shapes = probabilities
                               ? std::vector<wb::Shape>{bs(16, 128256, 50), bs(64, 50257, 50), bs(128, 151936, 50)}
                               : std::vector<wb::Shape>{bs(1, 128256, 50), bs(256, 128256, 64)},
      .bytes = [](const wb::Shape& s) { return 4.0 * s["B"] * s["V"] + 8.0 * s["B"] * s["k"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](TopKFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("x"), a.out<float>("values"), a.out<int32_t>("indices"), a.i("B"), a.i("V"), a.i("k"),
               a.workspace(), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = diagnose,
      .refused = refusals(true),
  };
}

wb::OpSpec<SoftmaxTopKProbsFn> softmax_topk_probs() {
  return {
      .name = "softmax_topk_probs",
      .dtype = "f32",
      .title = "softmax + top-k, writing the whole probability row too",
      .docs = kDocs,
      .tensors = {logits(), probs(), wb::output("values", {"B", "k"}, DType::F32, prob_tol()), indices()},
      .reference =
          [](const wb::RefCtx& r, int64_t b) {
            const Row row = read_row(r, b);
            expect_probs(r, row, b);
            expect_topk(r, row, b, true);
          },
      .ref_rows = [](const wb::Shape& s) { return s["B"]; },
      .test_shapes = topk_shapes(),
      .random_shapes = random_topk_shapes,
      .input_sets = input_sets(true),
      .race_shapes = race_shapes(true),
      .bench_shapes = {bs(64, 128256, 50)},
      .full_bench_shapes = {bs(1, 128256, 50), bs(256, 128256, 50)},
      .bytes = [](const wb::Shape& s) { return 8.0 * s["B"] * s["V"] + 8.0 * s["B"] * s["k"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](SoftmaxTopKProbsFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("x"), a.out<float>("probs"), a.out<float>("values"), a.out<int32_t>("indices"), a.i("B"),
               a.i("V"), a.i("k"), a.workspace(), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = diagnose,
      .refused = refusals(true),
  };
}

}  // namespace

WB_OPS(ch07) {
  wb::add_op(softmax());
  wb::add_op(topk(false));
  wb::add_op(topk(true));
  wb::add_op(softmax_topk_probs());
}

}  // namespace ch07
