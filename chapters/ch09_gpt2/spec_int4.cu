// Chapter 9's ops on INT4 weights (W4A16; harness/declare/op.cuh), beside spec.cu's:
//
//   gemv_w4a16{,_bias,_bias_gelu}/bf16  y = epilogue(W~ · x + b)                        v10, v14
//   ln_gemv_w4a16/bf16                  h = x + r; y = [gelu_tanh](W~ · LayerNorm(h) + b)   v11, v14
//   gemv_residual_w4a16/bf16            y = res + W~ · x + b                                v11, v14
//
// W~ is what the codes stand for: W~[n][k] = (q[n][k] - zero[n][g]) * scale[n][g], g = k / 128,
// the codes packed two to a byte in the GEMV's load order (ch09.cuh, int4_byte_in_row). The
// shapes name N and K (C for ln_gemv); derive adds Kh = K / 2 (bytes of a row of codes) and
// G = ceil(K / 128) (groups of a row). No exercise, and no library reference (no library
// reads this layout): the float64 reference on W~ is the judge. Inputs:
//   q      every byte pattern (ints(-128, 127) as int8: codes uniform over 0 .. 15)
//   zero   0 .. 15 per group;   scale in [0.05, 0.1] / 15 per group
// so |W~| <= 0.1, the size of the BF16 GEMV's w. Tolerances: the BF16 ops' own (K + 1 terms of
// at most 0.1, one rounding to BF16): each product x * (q - zero) is exact in FP32, the sums
// are FP32 as there, and the group's scale adds one rounding per 32 terms. The error of INT4
// against the weights it stands for (at most scale / 2 per weight) is the quantizer's to bound
// (models/gpt2/tests/quantize_test.cpp) and the model's to measure (gpt2 --int4 --check).
//
// The layout is the point of these ops, so a kernel that reads it wrongly must fail on every
// shape: the diagnoses name the two mistakes of chapters/ch09_gpt2/broken.cu (a code's nibbles
// swapped; another group's zero point) when the output matches them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "ch09.cuh"
#include "declare/op.cuh"
#include "spec_parts.h"
#include "spec_ref.h"

namespace ch09 {
namespace {

using namespace ref;
using namespace parts;
using wb::DType;
constexpr const char* kDocs = "docs/ch09-transformer.md";

// Kh (bytes of a row of codes) and G (groups of a row) from K, or from C for ln_gemv.
std::function<void(wb::Shape&)> derive_from(const char* k) {
  return [k](wb::Shape& s) { s.set("Kh", s[k] / 2).set("G", (s[k] + kInt4Group - 1) / kInt4Group); };
}

// How a kernel may read a code: as packed (the layout), or with one of the mistakes.
enum class Read { Layout, NibblesSwapped, NextGroupsZero };

// Row n of W~ in float64 (K values), as a kernel that reads the codes `how` would see it;
// `k_dim` names K's dimension (K or C).
std::vector<double> w4_row(const wb::RefCtx& r, int64_t n, const char* k_dim, Read how = Read::Layout) {
  const int64_t K = r[k_dim], Kh = r["Kh"], G = r["G"];
  const wb::HostTensor &q = r.in("q"), &zero = r.in("zero"), &scale = r.in("scale");
  std::vector<double> w(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) {
    const int byte = int(q.get(n * Kh + int4_byte_in_row(int(k)))) & 0xFF;  // the int8 input's bits as a byte
    const int shift = how == Read::NibblesSwapped ? 4 - int4_shift(int(k)) : int4_shift(int(k));
    const int64_t g = k / kInt4Group, zg = how == Read::NextGroupsZero ? (g + 1) % G : g;
    w[size_t(k)] = (double((byte >> shift) & 0xF) - zero.get(n * G + zg)) * scale.get(n * G + g);
  }
  return w;
}

// Row n of W~ · x in float64.
double dot_w4(const wb::RefCtx& r, int64_t n, Read how = Read::Layout) {
  const std::vector<double> w = w4_row(r, n, "K", how);
  const wb::HostTensor& x = r.in("x");
  double acc = 0;
  for (size_t k = 0; k < w.size(); ++k) acc += x.get(int64_t(k)) * w[k];
  return acc;
}

// Row n of W~ · LayerNorm(h) in float64 (ln_gemv).
double ln_dot_w4(const wb::RefCtx& r, int64_t n, Read how = Read::Layout) {
  const std::vector<double> xn = ln_row<bf16>(r), w = w4_row(r, n, "C", how);
  double acc = 0;
  for (size_t c = 0; c < w.size(); ++c) acc += xn[c] * w[c];
  return acc;
}

// A failing y tested against the two layout mistakes: `expected(n, how)` is y[n] as a kernel
// that reads the codes `how` would give it.
std::string diagnose_w4(const wb::Diagnosis& d, const wb::Tolerance& tol,
                        const std::function<double(int64_t, Read)>& expected) {
  return diagnose_y(d, [&](const wb::RefCtx&) {
    return std::vector<Mistake>{
        {[&](int64_t n) { return expected(n, Read::NibblesSwapped); }, tol,
         "the output equals the codes read with each byte's nibbles swapped: the code of k is in the LOW nibble "
         "when k % 8 < 4 and in the HIGH nibble otherwise (ch09.cuh, int4_shift)"},
        {[&](int64_t n) { return expected(n, Read::NextGroupsZero); }, tol,
         "the output equals the codes with the NEXT group's zero point: group g = k / 128 has its own zero point "
         "zero[n][g], beside its scale scale[n][g]"}};
  });
}

// q (N, Kh), scale and zero (N, G).
std::vector<wb::TensorSpec> w4_weights() {
  return {wb::input("q", {"N", "Kh"}, DType::I8, wb::dist::ints(-128, 127)),
          wb::input("scale", {"N", "G"}, DType::F32, wb::dist::uniform(0.05 / 15, 0.1 / 15)),
          wb::input("zero", {"N", "G"}, DType::I8, wb::dist::ints(0, 15))};
}

// Random shapes with K (or C) a multiple of 32, at most 8192.
std::function<std::vector<wb::Shape>(wb::Rng&)> random_w4(const char* k_dim, bool gelu) {
  return [k_dim, gelu](wb::Rng& rng) {
    std::vector<wb::Shape> out;
    for (int i = 0; i < 3; ++i) {
      wb::Shape s{{"N", rng.range(1, 5000)}, {k_dim, 32 * rng.range(1, 100)}};
      if (gelu) s.set("gelu", rng.range(0, 1));
      out.push_back(s);
    }
    return out;
  };
}

// Bytes: codes, FP32 scales and uint8 zero points; the BF16 vectors `vectors` elements.
double w4_bytes(double n, double k, double vectors) { return n * k / 2 + 5 * n * std::ceil(k / 128) + 2 * vectors; }

const uint8_t* bytes_of(const wb::Args& a, const char* name) {
  return reinterpret_cast<const uint8_t*>(a.in<int8_t>(name));
}

// The refusals every INT4 launcher makes: K not whole 16-byte loads, K past the staged row.
std::vector<wb::Refusal> w4_refused(const char* k_dim, bool gelu) {
  wb::Shape odd{{"N", 8}, {k_dim, 100}}, long_row{{"N", 8}, {k_dim, 8224}};
  if (gelu) {
    odd.set("gelu", 0);
    long_row.set("gelu", 0);
  }
  return {{odd, std::string(k_dim) + " % 32 != 0 (rows are 16-byte loads of 32 codes)"},
          {long_row, std::string(k_dim) + " > 8192 (the row is staged in shared memory)"}};
}

// --- gemv_w4a16 (v10) ---------------------------------------------------------------------

std::vector<wb::Shape> gemv_w4a16_shapes() {
  // K: one short group (32), a group and a piece (160), whole groups (768, 1024, 3072, 6400),
  // a short last group (1600 = 12 x 128 + 64, GPT-2 1.5B's C; 800), the longest (8192);
  // N: 1, 3, primes, GPT-2's widths and the vocabulary.
  return n_by("K", {{1, 32},
                    {3, 32},
                    {1, 96},
                    {3, 160},
                    {7, 768},
                    {31, 1600},
                    {257, 128},
                    {129, 800},
                    {2304, 768},
                    {768, 3072},
                    {3072, 768},
                    {4800, 1600},
                    {1600, 6400},
                    {6400, 1600},
                    {1001, 1024},
                    {50257, 768},
                    {3, 8192}});
}

wb::OpSpec<GemvW4Fn> gemv_w4a16_op(const char* name, Epilogue epi) {
  return {
      .name = name,
      .dtype = "bf16",
      .title =
          "one token, INT4 weights: y = " + with_epilogue(epi, "W~ · x") + ", W~ = (q - zero) · scale per group of 128",
      .docs = kDocs,
      .tensors = quantized_gemv_tensors(epi, w4_weights()),
      .derive = derive_from("K"),
      .reference =
          [epi](const wb::RefCtx& r, int64_t n) {
            r.expect("y", n, apply(epi, dot_w4(r, n), epi == Epilogue::None ? 0.0 : r.in("b").get(n)));
          },
      .ref_rows = rows_of_n,
      .test_shapes = gemv_w4a16_shapes(),
      .random_shapes = random_w4("K", false),
      .bench_shapes = quantized_gemv_bench(epi),
      .bytes =
          [epi](const wb::Shape& s) {
            return w4_bytes(s["N"], s["K"], s["K"] + s["N"] + (epi == Epilogue::None ? 0 : s["N"]));
          },
      .flops = gemv_flops("K"),
      .peak = wb::Peak::FP32,
      .launch =
          [epi](GemvW4Fn* fn, const wb::Args& a, cudaStream_t st) {
            const bf16* b = epi == Epilogue::None ? nullptr : a.in<bf16>("b");
            fn(a.in<bf16>("x"), bytes_of(a, "q"), a.in<float>("scale"), bytes_of(a, "zero"), b, a.out<bf16>("y"),
               a.i("N"), a.i("K"), epi, st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [epi](const wb::Diagnosis& d) -> std::string {
        if (d.inputs == nullptr) return {};
        const wb::RefCtx& r = *d.inputs;
        return diagnose_w4(d, wb::tolerance_for(DType::BF16, r["K"] + 1, 0.1), [&r, epi](int64_t n, Read how) {
          return apply(epi, dot_w4(r, n, how), epi == Epilogue::None ? 0.0 : r.in("b").get(n));
        });
      },
      .refused = w4_refused("K", false),
  };
}

// --- ln_gemv_w4a16 and gemv_residual_w4a16 (v11) -------------------------------------------

wb::OpSpec<LnGemvW4Fn> ln_gemv_w4a16_op() {
  const std::vector<wb::Shape> base =
      n_grid("C", {1, 3, 2304, 6400}, {32, 64, 768, 1600},
             n_by("C", {{257, 160}, {31, 1024}, {129, 800}, {3072, 768}, {4800, 1600}, {50257, 768}, {9, 8192}}));
  return {
      .name = "ln_gemv_w4a16",
      .dtype = "bf16",
      .title = "one token, INT4 weights: h = x + r, y = [gelu_tanh](W~ · LayerNorm(h) + b), W~ per group of 128",
      .docs = kDocs,
      .tensors = ln_gemv_tensors(DType::BF16, w4_weights()),  // ln_gemv/bf16's tolerance
      .derive = derive_from("C"),
      .reference =
          [](const wb::RefCtx& r, int64_t n) {
            if (n == 0) expect_h<bf16>(r);
            r.expect("y", n, apply(r["gelu"] ? Epilogue::BiasGelu : Epilogue::Bias, ln_dot_w4(r, n), r.in("b").get(n)));
          },
      .ref_rows = rows_of_n,
      .test_shapes = wb::shapes::each_with(base, "gelu", {0, 1}),
      .random_shapes = random_w4("C", true),
      // 124M's fc; 1.5B's QKV (the model's ln_gemv_qkv without the KV store) and fc
      .bench_shapes = {wb::Shape{{"N", 3072}, {"C", 768}, {"gelu", 1}},
                       wb::Shape{{"N", 4800}, {"C", 1600}, {"gelu", 0}},
                       wb::Shape{{"N", 6400}, {"C", 1600}, {"gelu", 1}}},
      .bytes = [](const wb::Shape& s) { return w4_bytes(s["N"], s["C"], 2.0 * s["N"] + 5.0 * s["C"]); },
      .flops = gemv_flops("C"),
      .peak = wb::Peak::FP32,
      .launch =
          [](LnGemvW4Fn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<bf16>("x"), a.in<bf16>("r"), a.in<bf16>("gamma"), a.in<bf16>("beta"), bytes_of(a, "q"),
               a.in<float>("scale"), bytes_of(a, "zero"), a.in<bf16>("b"), a.out<bf16>("h"), a.out<bf16>("y"), a.i("N"),
               a.i("C"), a.dim("gelu") ? Epilogue::BiasGelu : Epilogue::Bias, kLnEps, st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.inputs == nullptr) return {};
        const wb::RefCtx& r = *d.inputs;
        return diagnose_w4(d, wb::tolerance_for(DType::BF16, r["C"] + 1, 0.3), [&r](int64_t n, Read how) {
          return apply(r["gelu"] ? Epilogue::BiasGelu : Epilogue::Bias, ln_dot_w4(r, n, how), r.in("b").get(n));
        });
      },
      .refused = w4_refused("C", true),
  };
}

wb::OpSpec<GemvResidualW4Fn> gemv_residual_w4a16_op() {
  // N = C rows (1 and primes too), K = C or 4C (4096 and up: the split rows), a short last group.
  const std::vector<wb::Shape> shapes = n_by("K", {{1, 32},
                                                   {7, 32},
                                                   {3, 64},
                                                   {3, 160},
                                                   {1, 6400},
                                                   {31, 4096},
                                                   {257, 128},
                                                   {768, 768},
                                                   {768, 3072},
                                                   {769, 1024},
                                                   {1600, 1600},
                                                   {1600, 6400},
                                                   {2304, 768},
                                                   {6400, 1600},
                                                   {50257, 64}});
  return {
      .name = "gemv_residual_w4a16",
      .dtype = "bf16",
      .title = "one token, INT4 weights: y = res + W~ · x + b, W~ per group of 128, the residual add in the epilogue",
      .docs = kDocs,
      .tensors = residual_tensors(DType::BF16, w4_weights()),
      .derive = derive_from("K"),
      .reference = [](const wb::RefCtx& r,
                      int64_t n) { r.expect("y", n, r.in("res").get(n) + (dot_w4(r, n) + r.in("b").get(n))); },
      .ref_rows = rows_of_n,
      .test_shapes = shapes,
      .random_shapes = random_w4("K", false),
      // 124M's MLP projection; 1.5B's attention projection and MLP projection
      .bench_shapes = {wb::Shape{{"N", 768}, {"K", 3072}}, wb::Shape{{"N", 1600}, {"K", 1600}},
                       wb::Shape{{"N", 1600}, {"K", 6400}}},
      .bytes = [](const wb::Shape& s) { return w4_bytes(s["N"], s["K"], s["K"] + 3.0 * s["N"]); },
      .flops = gemv_flops("K"),
      .peak = wb::Peak::FP32,
      .launch =
          [](GemvResidualW4Fn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<bf16>("x"), bytes_of(a, "q"), a.in<float>("scale"), bytes_of(a, "zero"), a.in<bf16>("b"),
               a.in<bf16>("res"), a.out<bf16>("y"), a.i("N"), a.i("K"), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = [](const wb::Diagnosis& d) -> std::string {
        if (d.inputs == nullptr) return {};
        const wb::RefCtx& r = *d.inputs;
        return diagnose_w4(d, wb::tolerance_for(DType::BF16, r["K"] + 2, 0.1), [&r](int64_t n, Read how) {
          return r.in("res").get(n) + (dot_w4(r, n, how) + r.in("b").get(n));
        });
      },
      .refused = w4_refused("K", false),
  };
}

}  // namespace

WB_OPS(ch09_int4) {
  wb::add_op(gemv_w4a16_op("gemv_w4a16", Epilogue::None));
  wb::add_op(gemv_w4a16_op("gemv_w4a16_bias", Epilogue::Bias));
  wb::add_op(gemv_w4a16_op("gemv_w4a16_bias_gelu", Epilogue::BiasGelu));
  wb::add_op(ln_gemv_w4a16_op());
  wb::add_op(gemv_residual_w4a16_op());
}

}  // namespace ch09
