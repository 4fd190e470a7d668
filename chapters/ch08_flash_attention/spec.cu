// Chapter 8's ops, declared once (harness/declare/op.cuh).
//
//   attention_probs/f32   p = softmax(scale * q k^T, masked)                        ex2
//   attention/f32         o = p v, lse = m + log(l), FP32                             ex1, ex3
//   attention/bf16        the same with BF16 q, k, v, o (FP32 accumulation and lse)   ex4
//   attention_gqa/bf16    grouped heads: Hq query heads over Hkv kv heads             (v4)
//   attention_ragged/bf16 sequences packed back to back (cu_seqlens), token-major     ex6
//   attention_decode/bf16 one query per sequence against its KV cache                 ex5
// (part 2, at the end of this file).
//
// Dimensions: B, H (heads), Sq (queries), Sk (keys and values), D (head size), causal (0 or
// 1). The causal mask is bottom-right aligned: query i sees key j iff j <= i + Sk - Sq
// (ch08.cuh); a row that sees no key has o = 0 and lse = -inf. The scale is 1 / sqrt(D) in
// FP32 (attention_scale), and the float64 reference uses that same FP32 value.
//
// Tolerances. The FlashAttention tests' rule: a kernel's largest error against a float64
// reference may be at most twice the largest error of the library's result in the same
// precision, plus a small floor. Here the library result is the unfused cuBLAS pipeline
// (reference/ch08_flash_attention/cublas_attention.cuh), run on the same inputs in every
// test: the op's yardstick, factor 2, with a floor per output (TensorSpec::yardstick_floor).
// In front of it, each output also has an absolute bound (the Tol below) derived from the
// roundings a correct kernel makes, so that a kernel is also judged where the yardstick is
// not run (outputs of fewer than 256 elements) and every failure names its elements:
//   * a score s = scale * q.k summed in FP32 over D terms is off by at most about
//     16 u sqrt(D) sigma (u = 2^-24, sigma the scores' standard deviation: 1, or 4 for the
//     "peaked" inputs); a probability p = exp(s - m) / l then has a relative error of about
//     twice that, plus the sum l over Sk terms (8 u sqrt(Sk), or u Sk / 8 past 4,096 keys:
//     sum_err) and exp of arguments down to -60 or so (128 u): p_rel below;
//   * o = sum_j p_j v_j with |v| up to about 4: 4 p_rel absolute; in BF16 also the rounding
//     of every p to BF16 before the second product and of o itself, 2^-8 relative each
//     (2^-7 absolute and 2^-8 relative);
//   * lse = m + log(l): p_rel absolute.
// Mistakes (a missing rescale, a mask off by one key, the scale applied twice, a race on a
// tile) make errors of 1e-2 and more, far above every bound.
//
// Beyond the catalogue, for every op:
//   * scores at the edge of the range (the "far_below" and "far_above" inputs): q in [4, 5)
//     and k in [-5, -4) (or [4, 5)), so that every score of a row lies far below -88 (or far
//     above +88); a running max started at 0 makes every exp(s - 0) underflow, and with the
//     causal shapes whose first rows see no key or one key, a row of one finite score among
//     -inf is there too. Their tolerances (and the yardstick's floors) take the scores'
//     magnitude, not their spread, as the scale of the FP32 rounding (scores_at);
//   * a large case (tag "large", uniform inputs that are drawn fast): offsets past 2^31 in
//     the tensor a kernel indexes most, with everything else small: the scores (B H Sq Sk:
//     attention_probs' p, exercise 1's scratch), the keys and values (64 heads of 1,310,721
//     keys, one query each: heads 52 to 63 begin past 2^31 elements, so an offset computed in
//     int goes wrong for a fifth of the heads, not for a few keys of the last), the KV
//     cache (2 x 8 heads of 2,097,153 entries), the tokens of a ragged batch (4,097
//     sequences of 4,096). 8.6 to 17.2 GB each; the yardstick is not run;
//   * race shapes (OpSpec::race_shapes): thousands of query tiles (B H Sq / 64 >= 2,400) over
//     a few keys, a few query tiles over four key tiles or more, 600 ragged sequences, and a
//     cache long enough that every chunk of a split-KV decode holds many key tiles: every
//     block of a grid that fits on the GPU at once loops, and a persistent kernel without its
//     end-of-iteration barrier meets the race pass.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ch08.cuh"
#include "cublas_attention.cuh"
#include "declare/draw_shapes.h"
#include "declare/op.cuh"

namespace ch08 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch08-flash-attention.md";
constexpr double kU32 = 1.0 / 16777216.0;  // FP32 unit roundoff, 2^-24
constexpr double kUBf16 = 1.0 / 256.0;     // BF16 unit roundoff, 2^-8

wb::Shape attn(int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t causal) {
  return wb::Shape{{"B", B}, {"H", H}, {"Sq", Sq}, {"Sk", Sk}, {"D", D}, {"causal", causal}};
}

// The (query, key) pairs the mask leaves visible, summed over the rows of one head.
double visible_pairs(const wb::Shape& s) {
  const int64_t Sq = s["Sq"], Sk = s["Sk"];
  if (s["causal"] == 0) return static_cast<double>(Sq) * Sk;
  double n = 0;
  for (int64_t i = 0; i < Sq; ++i) n += static_cast<double>(std::clamp<int64_t>(i + Sk - Sq + 1, 0, Sk));
  return n;
}

// --- tolerances (see the header comment) ------------------------------------------------------

double sigma(const wb::Shape& s) { return s.param_or("sigma", 1.0); }
// The scores' magnitude where it is far above their spread (the far_below / far_above inputs:
// scores_at = 250): the FP32 rounding of a sum that large, not the spread, bounds the error.
double score_scale(const wb::Shape& s) { return std::max(sigma(s), s.param_or("scores_at", 0.0)); }
double score_err(const wb::Shape& s) { return 16 * kU32 * std::sqrt(static_cast<double>(s["D"])) * score_scale(s); }
// On those inputs the kernel's and the library's scores are rounded at that magnitude, each in
// its own order: the yardstick's floor takes that rounding in too (0 elsewhere).
double far_floor(const wb::Shape& s) { return s.param_or("scores_at", 0.0) > 0 ? 2 * score_err(s) : 0.0; }
// Keys a row may see at most: Sk, or the cache length (decode), or the longest sequence (ragged).
int64_t max_keys(const wb::Shape& s) { return s.has("Sk") ? s["Sk"] : s.has("Lmax") ? s["Lmax"] : s["maxlen"]; }
// The relative error of an FP32 running sum over a row's keys. Its random part grows like
// sqrt(n) (8 u sqrt(n)); but once the sum is thousands of times larger than each term, the
// roundings stop cancelling and the sum drifts by a fraction of an ulp per add, which grows
// like n: v4 on an H200 (four lanes per row, 327,680 adds each) drifted by 5e-4 on average
// and 1.7e-3 at worst over 1,310,721 keys, 2.9e-4 at 262,145. u n / 8 bounds that drift with
// room for a kernel that keeps fewer, longer sums; it is below 8 u sqrt(n) up to 4,096 keys.
double sum_err(int64_t n) {
  const double k = static_cast<double>(n);
  return kU32 * std::max(8 * std::sqrt(k), k / 8);
}
double p_rel(const wb::Shape& s) { return 2 * score_err(s) + sum_err(max_keys(s)) + 128 * kU32; }

wb::Tol o_tol() {
  return {[](const wb::Shape& s, DType t) {
            if (t == DType::BF16) return wb::Tolerance{2 * kUBf16 + 4 * p_rel(s), kUBf16 + p_rel(s)};
            return wb::Tolerance{4 * p_rel(s) + 1e-6, p_rel(s)};
          },
          "FP32 scores and sums (grow with sqrt(D) and with Sk); in BF16, p and o rounded to BF16"};
}
wb::Tol lse_tol() {
  return {[](const wb::Shape& s, DType) {
            return wb::Tolerance{p_rel(s) + 1e-6, 4 * kU32};
          },
          "FP32 scores and the FP32 sum of Sk terms"};
}
wb::Tol p_tol() {
  return {[](const wb::Shape& s, DType) {
            return wb::Tolerance{1e-9, p_rel(s)};
          },
          "FP32 scores, exp and the FP32 sum of Sk terms"};
}

// The outputs, with the floor of the yardstick rule. FP32 o (floor < 0): the harness's
// default, one FP32 rounding step plus the bound's atol (the FP32 pipelines' own errors are
// 1e-6 or less, so the bound decides). BF16 o: 1e-4, small next to the BF16 roundings the
// library result makes itself. lse: 2e-5 plus the error of an FP32 sum over the keys a row
// sees (sum_err): the kernel keeps its running sum through rescalings by exp2 while the
// library sums each finished row once (on an H200 at 8192 keys, D 64: 2.3e-5 against the
// library's 8.7e-7); a sum kept in BF16 is off by 1e-3 or more.
double lse_floor(const wb::Shape& s) { return 2e-5 + sum_err(max_keys(s)) + far_floor(s); }
wb::TensorSpec o_out(DType t, double floor, std::vector<std::string> dims = {"B", "H", "Sq", "D"}) {
  auto o = wb::output("o", std::move(dims), t, o_tol());
  if (floor >= 0)
    o.yardstick_floor = [floor](const wb::Shape& s) { return floor + far_floor(s); };  // negative: the default
  return o;
}
wb::TensorSpec lse_out(std::vector<std::string> dims = {"B", "H", "Sq"}) {
  auto l = wb::output("lse", std::move(dims), DType::F32, lse_tol());
  l.yardstick_floor = lse_floor;
  return l;
}

// --- shapes --------------------------------------------------------------------------------

// Every sequence length of the list, square, at D 64 and 128, with and without the mask;
// the other head sizes; 4096 (checked on sampled rows); Sq != Sk both ways; B * H from 1 to
// 128.
std::vector<wb::Shape> attention_shapes() {
  std::vector<wb::Shape> out;
  for (int64_t S : {1, 2, 17, 63, 64, 65, 127, 128, 129}) {
    for (int64_t D : {64, 128}) {
      for (int64_t c : {0, 1}) out.push_back(attn(1, 2, S, S, D, c));
    }
  }
  for (int64_t D : {64, 128}) {
    for (int64_t c : {0, 1}) out.push_back(attn(1, 1, 1000, 1000, D, c));
  }
  for (int64_t S : {17, 129, 1000}) {
    for (int64_t D : {32, 96}) {
      for (int64_t c : {0, 1}) out.push_back(attn(1, S == 1000 ? 1 : 2, S, S, D, c));
    }
  }
  out.insert(out.end(), {attn(1, 1, 4096, 4096, 64, 0), attn(1, 1, 4096, 4096, 128, 1), attn(1, 1, 4096, 4096, 96, 1)});
  // Sq != Sk: decode-like (1 query), fewer queries than keys, and more (whose first Sq - Sk
  // rows see no key when masked).
  const int64_t pairs[][3] = {{1, 1000, 64}, {17, 129, 128},  {64, 1000, 64}, {127, 4096, 128},
                              {129, 17, 64}, {1000, 65, 128}, {65, 64, 32}};
  for (const auto& [sq, sk, d] : pairs) {
    for (int64_t c : {0, 1}) out.push_back(attn(1, 2, sq, sk, d, c));
  }
  out.insert(out.end(), {attn(1, 1, 65, 65, 64, 1), attn(2, 3, 129, 129, 128, 0), attn(4, 32, 128, 128, 64, 1),
                         attn(128, 1, 63, 63, 32, 1), attn(8, 16, 1000, 1000, 64, 0)});
  return out;
}

std::vector<wb::Shape> probs_shapes() {
  std::vector<wb::Shape> out;
  for (int64_t S : {1, 2, 17, 63, 64, 65, 127, 128, 129, 1000, 4096}) {
    for (int64_t c : {0, 1}) out.push_back(attn(1, S >= 1000 ? 1 : 2, S, S, 64, c));
  }
  for (int64_t D : {32, 96, 128}) out.push_back(attn(1, 2, 129, 129, D, 1));
  const int64_t pairs[][2] = {{1, 1000}, {64, 1000}, {129, 17}, {1000, 65}};
  for (const auto& [sq, sk] : pairs) {
    for (int64_t c : {0, 1}) out.push_back(attn(1, 2, sq, sk, 64, c));
  }
  out.push_back(attn(4, 32, 128, 128, 64, 1));
  out.push_back(attn(128, 1, 65, 65, 32, 0));
  return out;
}

// Three seeded random shapes: B up to 3, H up to 4, Sq and Sk up to 700, D of the four.
std::vector<wb::Shape> random_shapes(wb::Rng& rng) {
  return wb::draw_shapes(rng, 3, [](wb::Rng& g) {
    const int64_t D = 32 * g.range(1, 4);
    return attn(g.range(1, 3), g.range(1, 4), g.range(1, 700), g.range(1, 700), D, g.range(0, 1));
  });
}

// Keys whose scale grows along the sequence: key j ~ normal(0, 0.25 + 2 j / (Sk - 1)).
// The row maximum then keeps rising from one key tile to the next, so an online softmax
// that forgets to rescale what it has accumulated is caught on every row.
wb::Dist rising_keys() {
  return wb::dist::custom(
      "normal(0, 0.25 + 2 j / Sk), rising along the keys", [](wb::HostTensor& t, const wb::Shape& s, wb::Rng& rng) {
        const int64_t Sk = s["Sk"], D = s["D"];
        for (int64_t e = 0; e < t.count(); ++e) {
          const int64_t j = (e / D) % Sk;
          const double u1 = rng.uniform(1e-12, 1.0), u2 = rng.uniform(0.0, 1.0);
          const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
          t.set(e, z * (0.25 + 2.0 * static_cast<double>(j) / static_cast<double>(std::max<int64_t>(Sk - 1, 1))));
        }
      });
}

// Scores far below or far above zero: q in [4, 5) and the keys in [-5, -4) or [4, 5). A score
// is about 20 sqrt(D) in magnitude (-115 at D = 32 ... -229 at D = 128) with a spread of a few
// units; scores_at (see score_scale) is that magnitude, which bounds the FP32 rounding of sums
// that large.
std::vector<wb::InputSet> edge_sets(const char* keys, std::vector<wb::Shape> shapes) {
  for (auto& x : shapes) x.set_param("scores_at", 250);
  return {{"far_below", {{"q", wb::dist::uniform(4, 5)}, {keys, wb::dist::uniform(-5, -4)}}, shapes},
          {"far_above", {{"q", wb::dist::uniform(4, 5)}, {keys, wb::dist::uniform(4, 5)}}, shapes}};
}

// Uniform inputs for the large cases (drawn fast: 2^31 normal values take seconds), and the
// scores' sigma for them (q and k in [-2, 2): about 1.33).
std::vector<std::pair<std::string, wb::Dist>> uniform_inputs(std::initializer_list<const char*> names) {
  std::vector<std::pair<std::string, wb::Dist>> out;
  for (const char* n : names) out.emplace_back(n, wb::dist::uniform(-2, 2));
  return out;
}
wb::Shape large_shape(wb::Shape s) {
  s.set_param("sigma", 1.5);
  return s.tag("large");
}

std::vector<wb::InputSet> input_sets(bool probs) {
  const int64_t D2 = probs ? 64 : 128;
  std::vector<wb::Shape> peaked, rising;
  for (int64_t c : {0, 1}) {
    peaked.push_back(attn(1, 2, 129, 129, 64, c).set_param("sigma", 4));
    peaked.push_back(attn(1, 1, 1000, 1000, D2, c).set_param("sigma", 4));
    rising.push_back(attn(1, 1, 1000, 1000, 64, c).set_param("sigma", 2.25));
    rising.push_back(attn(1, 1, 4096, 4096, D2, c).set_param("sigma", 2.25));
  }
  std::vector<wb::InputSet> sets = {{"peaked", {{"q", wb::dist::normal(0, 4)}}, peaked},
                                    {"rising_keys", {{"k", rising_keys()}}, rising}};
  for (auto& set : edge_sets("k", {attn(1, 2, 129, 129, 64, 1), attn(1, 2, 129, 17, 64, 1), attn(1, 2, 65, 64, 32, 1),
                                   attn(1, 1, 1000, 1000, D2, 0)})) {
    sets.push_back(std::move(set));
  }
  // The large cases: the scores past 2^31 (attention_probs' p; exercise 1's scratch), and
  // the keys and values past 2^31 (FP32 attention only here: BF16 has its own).
  std::vector<wb::Shape> large = {large_shape(attn(1, 128, 4097, 4097, 32, 0))};
  if (!probs) large.push_back(large_shape(attn(1, 64, 1, 1310721, 32, 0)));
  sets.push_back({"large", uniform_inputs({"q", "k", "v"}), large});
  return sets;
}

// The BF16 attention's sets: those of FP32 attention, with its large case past 2^31 keys.
std::vector<wb::InputSet> bf16_input_sets() {
  auto sets = input_sets(false);
  sets.back().shapes = {large_shape(attn(1, 64, 1, 1310721, 32, 1))};
  return sets;
}

// The race pass, two shapes, D 32: 153,632 query rows (2,401 tiles of 64, 4,802 of 32) over
// 17 keys, so every block of a grid that fits on the GPU at once meets two query tiles or
// more (a persistent kernel without its end-of-iteration barrier races); and 258 rows over
// 385 keys (four tiles of 128, seven of 64), so a missing barrier between key tiles races.
// Apart, they cost racecheck (which pays per shared-memory access: rows x keys) an eighth of
// one shape with both.
std::vector<wb::Shape> attention_race_shapes() { return {attn(8, 4, 4801, 17, 32, 0), attn(1, 2, 129, 385, 32, 0)}; }

// --- the float64 reference ---------------------------------------------------------------------

// Element i of an FP32 or BF16 host tensor as double. The reference reads Sk x D elements of
// k and of v for every query row it checks, so it reads the stored bits directly instead of
// going through HostTensor::get's per-element dispatch.
class Reader {
 public:
  explicit Reader(const wb::HostTensor& t)
      : p_(static_cast<const unsigned char*>(t.raw())), bf16_(t.dtype() == DType::BF16) {}
  double operator()(int64_t i) const {
    if (bf16_) {
      uint16_t b;
      std::memcpy(&b, p_ + 2 * i, 2);
      const uint32_t u = static_cast<uint32_t>(b) << 16;  // BF16 is the top half of an FP32
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    float f;
    std::memcpy(&f, p_ + 4 * i, 4);
    return f;
  }

 private:
  const unsigned char* p_;
  bool bf16_;
};

// Row r = (b * H + h) * Sq + i: the scores of the visible keys, their softmax, and whichever
// of o, lse and p the op has.
// One query row's softmax: e[j] = exp(s_j - m) for the keys j < visible, where s_j = scale *
// (q . k_j), q the D elements of tensor q from q_at, k_j those of tensor `kname` from kv_at(j);
// m the largest s_j (-infinity when no key is visible), l the sum of the e[j].
struct RowSoftmax {
  std::vector<double> e;
  double m, l;
};
template <class KvAt>
RowSoftmax row_softmax(const wb::RefCtx& r, const char* kname, int64_t q_at, KvAt kv_at, int64_t visible) {
  const int64_t D = r["D"];
  const double scale = attention_scale(static_cast<int>(D));
  const Reader q(r.in("q")), k(r.in(kname));
  std::vector<double> qrow(D), e(std::max<int64_t>(visible, 0));
  for (int64_t d = 0; d < D; ++d) qrow[d] = q(q_at + d);
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    const int64_t at = kv_at(j);
    double dot = 0;
    for (int64_t d = 0; d < D; ++d) dot += qrow[d] * k(at + d);
    e[j] = scale * dot;
    m = std::max(m, e[j]);
  }
  double l = 0;
  for (int64_t j = 0; j < visible; ++j) {
    e[j] = std::exp(e[j] - m);
    l += e[j];
  }
  return {std::move(e), m, l};
}

// o = the sum over j < visible of e[j] / l times v_j (the D elements of tensor `vname` from
// kv_at(j)), then written at o_at .. o_at + D - 1, and lse = m + log(l) at lse_at (-infinity
// when no key is visible). With with_values false, o is written as zeros.
template <class KvAt>
void expect_o_lse(const wb::RefCtx& r, const RowSoftmax& s, const char* vname, KvAt kv_at, int64_t visible,
                  bool with_values, int64_t o_at, int64_t lse_at) {
  const int64_t D = r["D"];
  std::vector<double> o(D, 0.0);
  if (with_values) {
    const Reader v(r.in(vname));
    for (int64_t j = 0; j < visible; ++j) {
      const double w = s.e[j] / s.l;
      const int64_t at = kv_at(j);
      for (int64_t d = 0; d < D; ++d) o[d] += w * v(at + d);
    }
  }
  for (int64_t d = 0; d < D; ++d) r.expect("o", o_at + d, o[d]);
  r.expect("lse", lse_at, visible > 0 ? s.m + std::log(s.l) : -std::numeric_limits<double>::infinity());
}

void reference_row(const wb::RefCtx& r, int64_t row, bool has_o, bool has_p) {
  const int64_t Sq = r["Sq"], Sk = r["Sk"], D = r["D"];
  const int64_t bh = row / Sq, i = row % Sq;
  const int64_t visible = r["causal"] != 0 ? std::clamp<int64_t>(i + Sk - Sq + 1, 0, Sk) : Sk;
  const auto kv_at = [&](int64_t j) { return (bh * Sk + j) * D; };
  const RowSoftmax s = row_softmax(r, "k", (bh * Sq + i) * D, kv_at, visible);
  if (has_p) {
    for (int64_t j = 0; j < Sk; ++j) r.expect("p", row * Sk + j, j < visible ? s.e[j] / s.l : 0.0);
    return;
  }
  expect_o_lse(r, s, "v", kv_at, visible, has_o && visible > 0, row * D, row);
}

int64_t query_rows(const wb::Shape& s) { return s["B"] * s["H"] * s["Sq"]; }

// --- benchmark shapes, bytes, FLOPs --------------------------------------------------------------

// B x 16 heads of S, each head size with and without the mask.
std::vector<wb::Shape> bench(int64_t B, int64_t S, std::initializer_list<int64_t> dims) {
  std::vector<wb::Shape> out;
  for (int64_t D : dims) {
    for (int64_t c : {0, 1}) out.push_back(attn(B, 16, S, S, D, c));
  }
  return out;
}

std::vector<wb::Shape> concat(std::vector<wb::Shape> a, const std::vector<wb::Shape>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The minimum traffic: read q, k, v once, write o and lse once.
double attention_bytes(const wb::Shape& s, int element) {
  const double bh = static_cast<double>(s["B"]) * s["H"];
  return bh * (element * 2.0 * (s["Sq"] + s["Sk"]) * s["D"] + 4.0 * s["Sq"]);
}
// 2 FLOPs per multiply-add, two products: 4 D per visible (query, key) pair (about half of
// 4 Sq Sk D with the mask).
double attention_flops(const wb::Shape& s) {
  return 4.0 * static_cast<double>(s["B"]) * s["H"] * s["D"] * visible_pairs(s);
}

// Likely causes, from the pattern of a failure.
std::string diagnose(const wb::Diagnosis& d) {
  const bool causal = d.shape["causal"] != 0;
  const bool square = d.shape["Sq"] == d.shape["Sk"];
  if (d.code == wb::Code::NaN && causal && d.shape["Sq"] > d.shape["Sk"]) {
    return "NaN on a masked shape with Sq > Sk: the first Sq - Sk rows see no key; their max is -inf and "
           "exp(-inf - (-inf)) is NaN. Such a row's o is 0 and its lse -inf (ch08.cuh)";
  }
  if (d.output == "lse" && d.code == wb::Code::Wrong) {
    return "lse is the NATURAL log of the sum of exp over the scaled, masked scores, m + log(l), with m in the "
           "same units as the scores (if you work in base 2 with exp2, multiply back by ln 2)";
  }
  if (d.code == wb::Code::Wrong && causal && !square) {
    return "wrong with the mask when Sq != Sk: the mask is bottom-right aligned, query i sees keys "
           "j <= i + Sk - Sq (the last query sees every key)";
  }
  if (d.code == wb::Code::Wrong && causal) {
    return "wrong with the causal mask: query i sees keys 0..i (the diagonal included, nothing to its right); "
           "check the diagonal tile and the bound of the loop that skips masked tiles";
  }
  if (d.code == wb::Code::Wrong && d.shape.param_or("sigma", 1) != 1) {
    return "wrong only when the scores spread widely or rise along the keys: when a tile raises a row's max, "
           "the running sum AND the running output must be multiplied by exp(m_old - m_new)";
  }
  return {};
}

template <class T, class Fn>
wb::OpSpec<Fn> attention_op(const char* dtype, const char* title, Fn* yardstick, double o_floor, wb::Peak peak,
                            std::vector<wb::Shape> bench_shapes, std::vector<wb::Shape> full_bench_shapes,
                            std::vector<wb::InputSet> sets) {
  constexpr DType t = wb::dtype_of<T>();
  return {
      .name = "attention",
      .dtype = dtype,
      .title = title,
      .docs = kDocs,
      .tensors = {wb::input("q", {"B", "H", "Sq", "D"}, t, wb::dist::normal(0, 1)),
                  wb::input("k", {"B", "H", "Sk", "D"}, t, wb::dist::normal(0, 1)),
                  wb::input("v", {"B", "H", "Sk", "D"}, t, wb::dist::normal(0, 1)), o_out(t, o_floor), lse_out()},
      .reference = [](const wb::RefCtx& r, int64_t row) { reference_row(r, row, true, false); },
      .ref_rows = query_rows,
      .test_shapes = attention_shapes(),
      .random_shapes = random_shapes,
      .input_sets = std::move(sets),
      .race_shapes = attention_race_shapes(),
      .bench_shapes = std::move(bench_shapes),
      .full_bench_shapes = std::move(full_bench_shapes),
      .bytes = [](const wb::Shape& s) { return attention_bytes(s, sizeof(T)); },
      .flops = attention_flops,
      .peak = peak,
      .launch =
          [](Fn* fn, const wb::Args& a, cudaStream_t st) {
            const int D = a.i("D");
            fn(a.in<T>("q"), a.in<T>("k"), a.in<T>("v"), a.out<T>("o"), a.out<float>("lse"), a.i("B"), a.i("H"),
               a.i("Sq"), a.i("Sk"), D, attention_scale(D), a.i("causal") != 0, a.workspace(), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = diagnose,
      .yardstick = yardstick,
      .yardstick_factor = 2.0,
  };
}

wb::OpSpec<ScoresSoftmaxF32Fn> probs_op() {
  auto p = wb::output("p", {"B", "H", "Sq", "Sk"}, DType::F32, p_tol());
  p.yardstick_floor = [](const wb::Shape& s) { return 1e-7 + far_floor(s); };
  return {
      .name = "attention_probs",
      .dtype = "f32",
      .title = "p = softmax(scale * q k^T, causal mask), FP32",
      .docs = kDocs,
      .tensors = {wb::input("q", {"B", "H", "Sq", "D"}, DType::F32, wb::dist::normal(0, 1)),
                  wb::input("k", {"B", "H", "Sk", "D"}, DType::F32, wb::dist::normal(0, 1)), p},
      .reference = [](const wb::RefCtx& r, int64_t row) { reference_row(r, row, false, true); },
      .ref_rows = query_rows,
      .test_shapes = probs_shapes(),
      .random_shapes = random_shapes,
      .input_sets = input_sets(true),
      .race_shapes = attention_race_shapes(),
      // The default run: one head group at 4096 (P is 268 MB); --full: B 4, H 16 (P is 4.3 GB).
      .bench_shapes = {attn(1, 4, 4096, 4096, 64, 0)},
      .full_bench_shapes = bench(4, 4096, {64, 128}),
      // Read q and k once, write p once.
      .bytes =
          [](const wb::Shape& s) {
            const double bh = static_cast<double>(s["B"]) * s["H"];
            return 4.0 * bh *
                   ((s["Sq"] + s["Sk"]) * static_cast<double>(s["D"]) + static_cast<double>(s["Sq"]) * s["Sk"]);
          },
      .flops =
          [](const wb::Shape& s) { return 2.0 * static_cast<double>(s["B"]) * s["H"] * s["D"] * visible_pairs(s); },
      .peak = wb::Peak::FP32,
      .launch =
          [](ScoresSoftmaxF32Fn* fn, const wb::Args& a, cudaStream_t st) {
            const int D = a.i("D");
            fn(a.in<float>("q"), a.in<float>("k"), a.out<float>("p"), a.i("B"), a.i("H"), a.i("Sq"), a.i("Sk"), D,
               attention_scale(D), a.i("causal") != 0, st);
          },
      .checks = {.deterministic = 1},
      .diagnose = diagnose,
      .yardstick = &unfused::probs_f32,
      .yardstick_factor = 2.0,
  };
}

// ===========================================================================================
// Part 2: grouped heads, ragged batches, decode. The same tolerances (o_tol, lse_tol: the
// keys a row may see are Sk, the cache's L_max or the longest sequence) and the same float64
// arithmetic, through one routine that takes where a row's query, keys and outputs are.

// One query row: q at element q_at, keys and values j < visible at rows kv_at(j) of k and v
// (D elements each), o at logical index o_at .. o_at + D - 1, lse at lse_at.
template <class KvAt>
void attend_row(const wb::RefCtx& r, const char* kname, const char* vname, int64_t q_at, KvAt kv_at, int64_t visible,
                int64_t o_at, int64_t lse_at) {
  expect_o_lse(r, row_softmax(r, kname, q_at, kv_at, visible), vname, kv_at, visible, true, o_at, lse_at);
}

wb::TensorSpec bf16_in(const char* name, std::vector<std::string> dims, wb::Dist d = wb::dist::normal(0, 1)) {
  return wb::input(name, std::move(dims), DType::BF16, std::move(d));
}

// A simple mixing hash for the generated lengths (splitmix64's finaliser).
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// --- attention_gqa/bf16 ------------------------------------------------------------------------

wb::Shape gqa(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Sk, int64_t D, int64_t causal) {
  return wb::Shape{{"B", B}, {"Hq", Hq}, {"Hkv", Hkv}, {"Sq", Sq}, {"Sk", Sk}, {"D", D}, {"causal", causal}};
}

// 32/8 (GQA), 32/1 (MQA) and 12/12 (no sharing) at the lengths and head sizes of part 1; a
// block of the grouped kernel holds rows of several heads whenever G * Sq is not a multiple
// of its 64 rows, which the odd lengths make happen on purpose.
std::vector<wb::Shape> gqa_shapes() {
  std::vector<wb::Shape> out;
  const int64_t groups[][2] = {{32, 8}, {32, 1}, {12, 12}};
  for (const auto& [hq, hkv] : groups) {
    for (int64_t S : {1, 17, 65, 129}) {
      for (int64_t D : {64, 128}) {
        for (int64_t c : {0, 1}) out.push_back(gqa(1, hq, hkv, S, S, D, c));
      }
    }
    for (int64_t c : {0, 1}) {
      out.push_back(gqa(1, hq, hkv, 1, 1000, 128, c));  // decode-like: one query, many keys
      out.push_back(gqa(1, hq, hkv, 129, 17, 64, c));   // more queries than keys
      out.push_back(gqa(1, hq, hkv, 64, 1000, 64, c));
    }
  }
  for (int64_t c : {0, 1}) {
    out.insert(out.end(),
               {gqa(1, 32, 8, 1000, 1000, 128, c), gqa(2, 12, 4, 100, 100, 32, c), gqa(3, 8, 2, 63, 63, 96, c)});
  }
  return out;
}

// A random grouped shape: B up to 2, 1 to 3 KV heads of 1 to 6 query heads each, Sq and Sk up
// to 400, D of the four, masked or not.
wb::Shape random_gqa(wb::Rng& g) {
  const int64_t hkv = g.range(1, 3), G = g.range(1, 6);
  return gqa(g.range(1, 2), hkv * G, hkv, g.range(1, 400), g.range(1, 400), 32 * g.range(1, 4), g.range(0, 1));
}

wb::OpSpec<AttentionGqaBf16Fn> gqa_op() {
  auto o = o_out(DType::BF16, 1e-4, {"B", "Hq", "Sq", "D"});
  auto lse = lse_out({"B", "Hq", "Sq"});
  return {
      .name = "attention_gqa",
      .dtype = "bf16",
      .title = "grouped-query attention forward, BF16: Hq query heads share Hkv key/value heads",
      .docs = kDocs,
      .tensors = {bf16_in("q", {"B", "Hq", "Sq", "D"}), bf16_in("k", {"B", "Hkv", "Sk", "D"}),
                  bf16_in("v", {"B", "Hkv", "Sk", "D"}), o, lse},
      .reference =
          [](const wb::RefCtx& r, int64_t row) {  // row = (b * Hq + hq) * Sq + i
            const int64_t Hq = r["Hq"], Hkv = r["Hkv"], Sq = r["Sq"], Sk = r["Sk"], D = r["D"];
            const int64_t bh = row / Sq, i = row % Sq, b = bh / Hq, hq = bh % Hq;
            const int64_t bkv = b * Hkv + hq / (Hq / Hkv);
            const int64_t visible = r["causal"] != 0 ? std::clamp<int64_t>(i + Sk - Sq + 1, 0, Sk) : Sk;
            attend_row(
                r, "k", "v", row * D, [&](int64_t j) { return (bkv * Sk + j) * D; }, visible, row * D, row);
          },
      .ref_rows = [](const wb::Shape& s) { return s["B"] * s["Hq"] * s["Sq"]; },
      .test_shapes = gqa_shapes(),
      .random_shapes = [](wb::Rng& rng) { return wb::draw_shapes(rng, 3, random_gqa); },
      .input_sets = edge_sets("k", {gqa(1, 8, 2, 129, 17, 64, 1), gqa(1, 8, 2, 129, 129, 128, 0)}),
      .race_shapes = {gqa(8, 4, 2, 4801, 17, 32, 0), gqa(1, 4, 2, 129, 385, 32, 0)},  // as attention_race_shapes
      .bench_shapes = {gqa(2, 32, 8, 4096, 4096, 128, 1)},
      .full_bench_shapes = {gqa(4, 32, 8, 4096, 4096, 128, 0), gqa(4, 32, 8, 4096, 4096, 128, 1),
                            gqa(4, 32, 1, 4096, 4096, 128, 1), gqa(4, 32, 32, 4096, 4096, 128, 1)},
      // q and o per query head, k and v per kv head: the bytes grouped heads save.
      .bytes =
          [](const wb::Shape& s) {
            const double b = static_cast<double>(s["B"]), D = static_cast<double>(s["D"]);
            return b * (2.0 * 2 * s["Hq"] * s["Sq"] * D + 2.0 * 2 * s["Hkv"] * s["Sk"] * D + 4.0 * s["Hq"] * s["Sq"]);
          },
      .flops =
          [](const wb::Shape& s) {
            wb::Shape one = attn(s["B"], s["Hq"], s["Sq"], s["Sk"], s["D"], s["causal"]);
            return attention_flops(one);
          },
      .peak = wb::Peak::BF16Tensor,
      .launch =
          [](AttentionGqaBf16Fn* fn, const wb::Args& a, cudaStream_t st) {
            const int D = a.i("D");
            fn(a.in<bf16>("q"), a.in<bf16>("k"), a.in<bf16>("v"), a.out<bf16>("o"), a.out<float>("lse"), a.i("B"),
               a.i("Hq"), a.i("Hkv"), a.i("Sq"), a.i("Sk"), D, attention_scale(D), a.i("causal") != 0, a.workspace(),
               st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.code == wb::Code::Wrong && d.shape["Hq"] != d.shape["Hkv"]) {
          return "wrong with grouped heads: query head hq reads kv head hq / (Hq / Hkv) (neighbouring query "
                 "heads share a kv head; hq % Hkv is the other, wrong, convention)";
        }
        return {};
      },
      .yardstick = &unfused::attention_gqa_bf16,
      .yardstick_factor = 2.0,
      .refused = {{gqa(1, 12, 8, 17, 17, 64, 0), "Hkv does not divide Hq"}},
  };
}

// --- attention_ragged/bf16 ---------------------------------------------------------------------

// The lengths of a ragged batch, by the shape's "mix": a fixed list, or generated from it.
std::vector<int64_t> ragged_lengths(int64_t mix) {
  switch (mix) {
    case 1:
      return {1, 63, 64, 65, 8191};
    case 2:
      return {65, 1, 64, 63};
    case 3:
      return {17, 129, 1000, 2, 64, 65, 127, 300};
    case 4:
      return {128, 128, 128, 128};
    case 5:
      return std::vector<int64_t>(4097, 4096);  // the large case: 16,781,312 tokens
    case 6:
      return std::vector<int64_t>(600, 257);  // the race pass: 600 sequences of 5 tiles
    default:
      break;
  }
  std::vector<int64_t> out;
  if (mix >= 100 && mix < 200) {  // random shapes: 1 to 6 sequences of 1 to 700 tokens
    const int64_t B = 1 + static_cast<int64_t>(mix64(mix) % 6);
    for (int64_t b = 0; b < B; ++b) out.push_back(1 + static_cast<int64_t>(mix64(mix * 64 + b) % 700));
  } else if (mix == 200 || mix == 300) {  // benchmark: 16 lengths in 512 .. 8192, and their mean 16 times
    for (int64_t b = 0; b < 16; ++b) out.push_back(512 + static_cast<int64_t>(mix64(200 * 64 + b) % 7681));
    if (mix == 300) {
      int64_t total = 0;
      for (int64_t n : out) total += n;
      for (int64_t b = 0; b < 16; ++b) out[b] = total / 16 + (b < total % 16 ? 1 : 0);
    }
  } else {
    throw std::invalid_argument("ragged: unknown length mix " + std::to_string(mix));
  }
  return out;
}

wb::Shape ragged(int64_t mix, int64_t Hq, int64_t Hkv, int64_t D, int64_t causal) {
  const auto lens = ragged_lengths(mix);
  int64_t T = 0, longest = 0;
  for (int64_t n : lens) {
    T += n;
    longest = std::max(longest, n);
  }
  const int64_t B = static_cast<int64_t>(lens.size());
  return wb::Shape{{"B", B},     {"B1", B + 1}, {"T", T},           {"maxlen", longest}, {"Hq", Hq},
                   {"Hkv", Hkv}, {"D", D},      {"causal", causal}, {"mix", mix}};
}

std::vector<wb::Shape> ragged_shapes() {
  std::vector<wb::Shape> out;
  for (int64_t c : {0, 1}) {
    for (int64_t D : {64, 128}) out.push_back(ragged(1, 2, 2, D, c));  // 1, 63, 64, 65, 8191 in one batch
    for (int64_t D : {32, 96}) out.push_back(ragged(2, 3, 3, D, c));
    out.insert(out.end(),
               {ragged(3, 32, 8, 128, c), ragged(3, 12, 12, 64, c), ragged(4, 4, 1, 128, c), ragged(1, 8, 2, 128, c)});
  }
  return out;
}

// A random ragged shape: length mix 100 to 199, 1 or 2 KV heads of 1 to 4 query heads each, D
// of the four, masked or not.
wb::Shape random_ragged(wb::Rng& g) {
  const int64_t hkv = g.range(1, 2), G = g.range(1, 4);
  return ragged(100 + g.range(0, 99), hkv * G, hkv, 32 * g.range(1, 4), g.range(0, 1));
}

wb::OpSpec<RaggedAttentionBf16Fn> ragged_op() {
  auto o = wb::output("o", {"T", "Hq", "D"}, DType::BF16, o_tol());
  auto lse = wb::output("lse", {"Hq", "T"}, DType::F32, lse_tol());
  return {
      .name = "attention_ragged",
      .dtype = "bf16",
      .title = "attention forward over a ragged batch (cu_seqlens, token-major), BF16",
      .docs = kDocs,
      .tensors = {bf16_in("q", {"T", "Hq", "D"}), bf16_in("k", {"T", "Hkv", "D"}), bf16_in("v", {"T", "Hkv", "D"}),
                  wb::input("cu_seqlens", {"B1"}, DType::I32,
                            wb::dist::custom("the prefix sums of the shape's lengths",
                                             [](wb::HostTensor& t, const wb::Shape& s, wb::Rng&) {
                                               int64_t at = 0;
                                               t.set(0, 0);
                                               const auto lens = ragged_lengths(s["mix"]);
                                               for (size_t b = 0; b < lens.size(); ++b) {
                                                 at += lens[b];
                                                 t.set(static_cast<int64_t>(b) + 1, static_cast<double>(at));
                                               }
                                             })),
                  o, lse},
      .reference =
          [](const wb::RefCtx& r, int64_t row) {  // row = t * Hq + hq
            const int64_t Hq = r["Hq"], Hkv = r["Hkv"], D = r["D"], T = r["T"], B = r["B"];
            const int64_t t = row / Hq, hq = row % Hq, hkv = hq / (Hq / Hkv);
            const wb::HostTensor& cu = r.in("cu_seqlens");
            int64_t b = 0;
            while (b + 1 < B && static_cast<int64_t>(cu.get(b + 1)) <= t) ++b;
            const int64_t start = static_cast<int64_t>(cu.get(b)), len = static_cast<int64_t>(cu.get(b + 1)) - start;
            const int64_t i = t - start;
            const int64_t visible = r["causal"] != 0 ? i + 1 : len;
            attend_row(
                r, "k", "v", row * D, [&](int64_t j) { return ((start + j) * Hkv + hkv) * D; }, visible, row * D,
                hq * T + t);
          },
      .ref_rows = [](const wb::Shape& s) { return s["T"] * s["Hq"]; },
      .test_shapes = ragged_shapes(),
      .random_shapes = [](wb::Rng& rng) { return wb::draw_shapes(rng, 3, random_ragged); },
      // Past 2^31: 16,781,312 tokens of one head of 128 in q, k, v and o (4.3 GB each).
      .input_sets =
          [] {
            auto sets = edge_sets("k", {ragged(2, 3, 3, 64, 1), ragged(3, 4, 2, 128, 0)});
            sets.push_back({"large", uniform_inputs({"q", "k", "v"}), {large_shape(ragged(5, 1, 1, 128, 1))}});
            return sets;
          }(),
      .race_shapes = {ragged(6, 2, 2, 32, 1)},
      // 16 sequences of 512 to 8192 tokens, and 16 of their mean length (the same tokens): the
      // default run at 8 heads, causal; --full at 16 heads, with and without the mask, and 32/8.
      .bench_shapes = {ragged(200, 8, 8, 128, 1), ragged(300, 8, 8, 128, 1)},
      .full_bench_shapes = {ragged(200, 16, 16, 128, 0), ragged(300, 16, 16, 128, 0), ragged(200, 16, 16, 128, 1),
                            ragged(300, 16, 16, 128, 1), ragged(200, 32, 8, 128, 1), ragged(300, 32, 8, 128, 1)},
      .bytes =
          [](const wb::Shape& s) {
            const double T = static_cast<double>(s["T"]), D = static_cast<double>(s["D"]);
            return T * (2.0 * 2 * s["Hq"] * D + 2.0 * 2 * s["Hkv"] * D + 4.0 * s["Hq"]);
          },
      .flops =
          [](const wb::Shape& s) {
            double pairs = 0;
            for (int64_t n : ragged_lengths(s["mix"])) {
              pairs += s["causal"] != 0 ? static_cast<double>(n) * (n + 1) / 2 : static_cast<double>(n) * n;
            }
            return 4.0 * s["Hq"] * s["D"] * pairs;
          },
      .peak = wb::Peak::BF16Tensor,
      .launch =
          [](RaggedAttentionBf16Fn* fn, const wb::Args& a, cudaStream_t st) {
            const int D = a.i("D");
            fn(a.in<bf16>("q"), a.in<bf16>("k"), a.in<bf16>("v"), a.out<bf16>("o"), a.out<float>("lse"),
               a.in<int32_t>("cu_seqlens"), a.i("B"), a.i("T"), a.i("Hq"), a.i("Hkv"), a.i("maxlen"), D,
               attention_scale(D), a.i("causal") != 0, a.workspace(), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.code == wb::Code::Wrong) {
          return "wrong on a ragged batch: sequence b is tokens cu_seqlens[b] .. cu_seqlens[b + 1] - 1, a row "
                 "of q is Hq * D elements after the previous one, lse is [Hq][T], and a token sees only its "
                 "own sequence (never a token of the next one, even inside a tile)";
        }
        return {};
      },
  };
}

// --- attention_decode/bf16 ---------------------------------------------------------------------

// L_b of sequence b: mix 0, every sequence fills the cache (L_b = L_max); mix 1, lengths spread
// over 1 .. L_max (the first sequence full).
int64_t decode_len(const wb::Shape& s, int64_t b) {
  const int64_t L = s["Lmax"];
  if (s["mix"] == 0 || b == 0) return L;
  return 1 + static_cast<int64_t>(mix64(static_cast<uint64_t>(b) * 7919 + static_cast<uint64_t>(L)) % L);
}

wb::Shape decode(int64_t B, int64_t Hq, int64_t Hkv, int64_t Lmax, int64_t D, int64_t mix) {
  return wb::Shape{{"B", B}, {"Hq", Hq}, {"Hkv", Hkv}, {"Lmax", Lmax}, {"D", D}, {"mix", mix}};
}

// L 1, 17, 4096 and 32768 for 32/8, 32/1 and 12/12 at D 64 and 128 (batch 1: the split-KV
// case); batches up to 64 with lengths that differ per sequence.
std::vector<wb::Shape> decode_shapes() {
  std::vector<wb::Shape> out;
  const int64_t groups[][2] = {{32, 8}, {32, 1}, {12, 12}};
  for (const auto& [hq, hkv] : groups) {
    for (int64_t L : {1, 17, 4096, 32768}) {
      for (int64_t D : {64, 128}) out.push_back(decode(1, hq, hkv, L, D, 0));
    }
  }
  out.insert(out.end(), {decode(4, 32, 8, 4096, 128, 1), decode(64, 32, 8, 1000, 64, 1), decode(64, 12, 12, 17, 128, 1),
                         decode(3, 8, 2, 300, 96, 1), decode(2, 4, 4, 65, 32, 0), decode(2, 32, 1, 32768, 128, 1)});
  return out;
}

// The newest entry of each sequence (j = L_b - 1, the token being decoded) drawn wider than the
// rest, normal(0, 8) against normal(0, 1): its score often dominates the row, as a token's
// attention to itself often does, so a kernel that drops it is caught at every length.
wb::Dist decode_keys() {
  return wb::dist::custom("normal(0, 1); the newest entry of each sequence normal(0, 8)",
                          [](wb::HostTensor& t, const wb::Shape& s, wb::Rng& rng) {
                            const int64_t Hkv = s["Hkv"], L = s["Lmax"], D = s["D"];
                            for (int64_t e = 0; e < t.count(); ++e) {
                              const int64_t j = (e / D) % L, b = e / (D * L * Hkv);
                              const double u1 = rng.uniform(1e-12, 1.0), u2 = rng.uniform(0.0, 1.0);
                              const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
                              t.set(e, z * (j == decode_len(s, b) - 1 ? 8.0 : 1.0));
                            }
                          });
}

double decode_keys_read(const wb::Shape& s) {
  double n = 0;
  for (int64_t b = 0; b < s["B"]; ++b) n += static_cast<double>(decode_len(s, b));
  return n;
}

// A random decode shape: up to 8 sequences, 1 to 4 KV heads of 1 to 8 query heads each, L_max up
// to 3000, D of the four, length mix 0 or 1.
wb::Shape random_decode(wb::Rng& g) {
  const int64_t hkv = g.range(1, 4), G = g.range(1, 8);
  return decode(g.range(1, 8), hkv * G, hkv, g.range(1, 3000), 32 * g.range(1, 4), g.range(0, 1));
}

wb::OpSpec<DecodeAttentionBf16Fn> decode_op() {
  auto o = o_out(DType::BF16, 1e-4, {"B", "Hq", "D"});
  auto lse = lse_out({"B", "Hq"});
  return {
      .name = "attention_decode",
      .dtype = "bf16",
      .title = "decode attention: one query per sequence against its BF16 KV cache (grouped heads)",
      .docs = kDocs,
      .tensors = {bf16_in("q", {"B", "Hq", "D"}), bf16_in("k_cache", {"B", "Hkv", "Lmax", "D"}, decode_keys()),
                  bf16_in("v_cache", {"B", "Hkv", "Lmax", "D"}),
                  wb::input("seq_lens", {"B"}, DType::I32,
                            wb::dist::custom("the shape's lengths L_b (1 .. L_max)",
                                             [](wb::HostTensor& t, const wb::Shape& s, wb::Rng&) {
                                               for (int64_t b = 0; b < s["B"]; ++b) {
                                                 t.set(b, static_cast<double>(decode_len(s, b)));
                                               }
                                             })),
                  o, lse},
      .reference =
          [](const wb::RefCtx& r, int64_t row) {  // row = b * Hq + hq
            const int64_t Hq = r["Hq"], Hkv = r["Hkv"], L = r["Lmax"], D = r["D"];
            const int64_t b = row / Hq, hq = row % Hq, bkv = b * Hkv + hq / (Hq / Hkv);
            const int64_t visible = static_cast<int64_t>(r.in("seq_lens").get(b));
            attend_row(
                r, "k_cache", "v_cache", row * D, [&](int64_t j) { return (bkv * L + j) * D; }, visible, row * D, row);
          },
      .ref_rows = [](const wb::Shape& s) { return s["B"] * s["Hq"]; },
      .test_shapes = decode_shapes(),
      .random_shapes = [](wb::Rng& rng) { return wb::draw_shapes(rng, 3, random_decode); },
      // Past 2^31: a cache of 2 x 8 heads of 2,097,153 entries of 64 (4.3 GB each for k and v).
      .input_sets =
          [] {
            auto sets = edge_sets("k_cache", {decode(2, 8, 2, 300, 64, 1), decode(1, 8, 8, 17, 128, 0)});
            sets.push_back({"large",
                            uniform_inputs({"q", "k_cache", "v_cache"}),
                            {large_shape(decode(2, 16, 8, 2097153, 64, 0))}});
            return sets;
          }(),
      // 65,600 entries: 64 chunks of 16 key tiles each in a split-KV launch.
      .race_shapes = {decode(1, 8, 8, 65600, 64, 0)},
      // Batch 1, 32 query heads over 8 kv heads, D 128: the bandwidth target's shapes (32768 in
      // --full, with the batched ones).
      .bench_shapes = {decode(1, 32, 8, 8192, 128, 0)},
      .full_bench_shapes = {decode(1, 32, 8, 32768, 128, 0), decode(16, 32, 8, 4096, 128, 0),
                            decode(64, 32, 8, 2048, 128, 0), decode(1, 32, 1, 32768, 128, 0)},
      // The cache read once (the L_b valid entries of k and v), q read and o, lse written.
      .bytes =
          [](const wb::Shape& s) {
            const double D = static_cast<double>(s["D"]);
            return 2.0 * 2 * s["Hkv"] * D * decode_keys_read(s) + static_cast<double>(s["B"]) * s["Hq"] * (4 * D + 4);
          },
      .flops = [](const wb::Shape& s) { return 4.0 * s["Hq"] * s["D"] * decode_keys_read(s); },
      .peak = wb::Peak::BF16Tensor,
      .launch =
          [](DecodeAttentionBf16Fn* fn, const wb::Args& a, cudaStream_t st) {
            const int D = a.i("D");
            fn(a.in<bf16>("q"), a.in<bf16>("k_cache"), a.in<bf16>("v_cache"), a.in<int32_t>("seq_lens"),
               a.out<bf16>("o"), a.out<float>("lse"), a.i("B"), a.i("Hq"), a.i("Hkv"), a.i("Lmax"), D,
               attention_scale(D), a.workspace(), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.code != wb::Code::Wrong) return {};
        if (d.shape["Lmax"] == 1) {
          return "wrong with a cache of ONE entry: the new token's own key and value are in the cache at "
                 "j = L_b - 1 and must be attended to (keys 0 .. L_b - 1 inclusive)";
        }
        return "wrong in decode: keys 0 .. seq_lens[b] - 1 count (the last one is the new token), nothing at "
               "or past seq_lens[b]; chunks merge as o = sum_c exp(lse_c - lse) o_c with "
               "lse = log sum_c exp(lse_c), not as a plain average";
      },
      .yardstick = &unfused::decode_bf16,
      .yardstick_factor = 2.0,
      .refused = {{decode(1, 12, 8, 17, 64, 0), "Hkv does not divide Hq"}},
  };
}

}  // namespace

WB_OPS(ch08) {
  wb::add_op(probs_op());
  // The default benchmark is the short one (meant to take under a minute): a batch of 1 or 2
  // at the lengths of the comparisons; --full runs them at B 4, H 16, the measured tables' shapes.
  // FP32: the fused-vs-unfused comparison at 4096 (the scores of B = 4, H = 16 take 4.3 GB).
  wb::add_op(attention_op<float, AttentionF32Fn>("f32", "attention forward, FP32: o = softmax(scale q k^T) v, lse",
                                                 &unfused::attention_f32, -1.0, wb::Peak::FP32, bench(1, 4096, {64}),
                                                 bench(4, 4096, {64, 128}), input_sets(false)));
  // BF16: S 8192, D 64 and 128, with and without the mask (the FlashAttention-2 and cuDNN
  // comparison, B 4 in --full); --full adds 4096 (beside the unfused cuBLAS pipeline).
  wb::add_op(attention_op<bf16, AttentionBf16Fn>(
      "bf16", "attention forward, BF16 in and out, FP32 accumulation", &unfused::attention_bf16, 1e-4,
      wb::Peak::BF16Tensor, {attn(2, 16, 8192, 8192, 128, 0), attn(2, 16, 8192, 8192, 64, 1)},
      concat(bench(4, 8192, {64, 128}), bench(4, 4096, {64, 128})), bf16_input_sets()));
  wb::add_op(gqa_op());
  wb::add_op(ragged_op());
  wb::add_op(decode_op());
}

}  // namespace ch08
