// Chapter 5's op, declared once per type pair. The harness makes the tests, the benchmark
// rows and the broken-kernel rejections from these declarations (harness/declare/op.cuh).
//
//   gemm/f16_f32  gemm/f16_f16  gemm/bf16_f32  gemm/bf16_bf16  gemm/i8_i32
//     D (M x N) = A (M x K) * B (K x N) (+ C when with_c = 1), every matrix row-major
// (The FP8 ops, fp8_quantize/bf16_e4m3, gemm_fp8/e4m3_bf16 and gemm_fp8_block/e4m3_bf16, are
// declared in spec_fp8.cu.)
//
// How a kernel is checked, beyond the harness's passes (unwritten, NaN, writes outside D,
// the stream, a second call, a read past the end of A or B):
//   * every element (a sample of rows for large problems) is within
//     wb::tolerance_for(output type, K (+1 with C)) of a float64 reference on the same
//     rounded inputs; INT8 must match exactly;
//   * for float outputs, the kernel's largest error is at most 4x cuBLAS's largest error on
//     the same inputs, plus one rounding step of the output type at the largest value and
//     the tolerance's absolute term (the "yardstick"): this catches FP16/BF16 accumulation,
//     which the loose FP16/BF16 output tolerance alone would let through;
//   * a second run on the same inputs writes the same bits (a difference is a race);
//   * INT8 on extreme inputs whose sums pass 2^24 (an epilogue through float loses bits
//     there), and FP16/BF16 on inputs of +-256 whose products (65536) overflow an FP16
//     accumulator.
// A failure names the wrong coordinates, expected vs got, a tile map and, where one fits,
// a diagnosis: the K remainder left out, A or B read as column-major.
//
// Also:
//   * row alignment, one operand at a time: K (A's row length) and N (B's) of 34 to 44, so
//     that the rows of one operand start 2, 4, 6, 8, 10 or 12 bytes past a 16-byte boundary
//     (INT8; 4, 8 or 12 in FP16 and BF16) while the other's are aligned: a vector or cp.async
//     path that checks one operand's alignment, or the wrong multiple, meets its misaligned
//     rows;
//   * race shapes (OpSpec::race_shapes): 4100 x 8200 x 64, more than 2,000 tiles of 128 x 128
//     (8,700 of 64 x 64), so that every block of a grid that fits on the GPU at once computes
//     two tiles or more: a persistent GEMM without a barrier between its last reads of a
//     stage and the next tile's first copies into it meets the race pass;
//   * a large case (tag "large", after every other shape) whose A passes 2^31 elements, so
//     that an offset i * K kept in an int reads the wrong rows: 150,001 x 32 x 16,384
//     (large_shape() says why these numbers). It runs on gemm/f16_f32, gemm/bf16_bf16 and
//     gemm/i8_i32, the pairs that meet every shape. gemm/f16_f16 and gemm/bf16_f32 share
//     their main loop, where A is addressed, with f16_f32 and bf16_bf16 (one kernel template
//     per exercise and per solution step; only the epilogue differs, and its offsets into C
//     and D stay below 2^23 here): a second 4.9 GB case would test nothing new.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ch05.cuh"
#include "cublas_gemm.cuh"
#include "declare/shapes.h"
#include "declare/op.cuh"

namespace ch05 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch05-wmma.md";

wb::Shape gemm_shape(int64_t m, int64_t n, int64_t k, int with_c = 0) {
  wb::Shape s{{"M", m}, {"N", n}, {"K", k}};
  s.set_param("with_c", with_c);
  return s;
}

std::vector<wb::Shape> as_shapes(const std::vector<wb::Extent3>& e, int with_c = 0) {
  std::vector<wb::Shape> out;
  for (const auto& x : e) out.push_back(gemm_shape(x.m, x.n, x.k, with_c));
  return out;
}

bool with_c(const wb::Shape& s) { return s.param("with_c") != 0; }

// --- shapes ---------------------------------------------------------------------------------

// The shared GEMM catalogue (tiny, primes, one off every tile size in m, n and k, thin,
// k = 1, a long k, 1024^3, 2048^3) plus the edges of this chapter's tiles: fragments of 16,
// 128 x 256 block tiles, 64-deep TMA boxes, and rows whose length is a multiple of 16 bytes
// (the vector and TMA paths) without being a multiple of any tile.
std::vector<wb::Shape> chapter_shapes() {
  std::vector<wb::Shape> s;
  for (auto x : as_shapes(wb::gemm_shapes(2048))) {
    if (x["M"] == 2048) x.tag("large");
    s.push_back(x);
  }
  const std::vector<wb::Extent3> extra = {
      {17, 33, 65},      // every dimension one past a multiple of 16
      {16, 16, 16},      // exactly one fragment
      {15, 17, 31},      // one short of a fragment in m and k
      {8, 8, 8},         // aligned rows, less than one fragment
      {128, 256, 64},    // exactly one block tile of v5 / v6
      {136, 264, 72},    // aligned rows, one past a fragment multiple of every tile
      {200, 520, 136},   // aligned rows; partial block tiles in m and n, partial K step
      {520, 776, 1032},  // aligned rows, several tiles, partial everywhere
  };
  for (const auto& x : as_shapes(extra)) s.push_back(x);
  return s;
}

// One operand's rows misaligned, the other's aligned: K (A) or N (B) in 34 .. 44 (2 .. 12 bytes
// past 16 in INT8, 4 .. 12 in 16-bit types), the other 64; and two larger ones, several tiles.
std::vector<wb::Shape> alignment_shapes() {
  std::vector<wb::Extent3> e;
  for (int64_t r : {34, 36, 38, 40, 42, 44}) {
    e.push_back({64, 64, r});  // A's rows misaligned
    e.push_back({64, r, 64});  // B's rows misaligned
  }
  e.push_back({130, 132, 96});
  e.push_back({130, 96, 132});
  return as_shapes(e);
}

// The race pass (see the header).
std::vector<wb::Shape> race_shapes() { return {gemm_shape(4100, 8200, 64)}; }

// The large case: 150,001 x 32 x 16,384, without C. A holds 2,457,616,384 elements, and
// i * K passes 2^31 - 1 from row 131,072 on: the last 12.6% of the rows, about 1,000 of the
// ~8,200 rows the check samples (D's 4.8 M elements are checked on whole rows covering about
// 2^18 of them, the first and last row among them). Why these numbers:
//   * memory: A is 4.9 GB in FP16 or BF16 and 2.5 GB in INT8, on the host and again on the
//     GPU; B (1 MB or less) and D (19 MB or less) are small;
//   * work: 2 M N K = 0.16 TFLOP, a fraction of a second for every step (v1_wmma_global,
//     the slowest, ran 28 TFLOPS at 4096^3 on an H100); the float64 reference of the sampled
//     rows is 4.3 G multiply-adds, shared out to the host's cores; the inputs are uniform
//     (or uniform integers), drawn in parallel chunks (fast), as for every other shape;
//   * grid limits: one warp per 16 x 16 tile puts M / 16 = 9,376 tiles along y (the limit is
//     65,535): the long K keeps M small;
//   * paths: N and K multiples of 16 (the 16-byte, cp.async and TMA paths run, past the wrap
//     too), M odd (a partial tile at the bottom, beyond the wrap);
//   * the tolerance is the op's rule for K = 16,384; the checks skip the yardstick on every
//     case tagged large (it is there for the offsets); INT8 sums stay far inside INT32 (at
//     most 16,384 * 2^14 = 2^28);
//   * the references, cublasGemmEx and cuBLASLt, take int sizes and leading dimensions
//     (m = 32, n = 150,001, k = 16,384 all fit) and address the matrices in 64 bits: their
//     own runs of this case show it.
wb::Shape large_shape() { return gemm_shape(150001, 32, 16384).tag("large"); }

// The type pairs that share their main loop with one above (only the epilogue differs)
// meet the shapes that exercise the edges.
std::vector<wb::Shape> edge_shapes() {
  return as_shapes({{1, 1, 1},
                    {15, 17, 31},
                    {17, 33, 65},
                    {257, 255, 17},
                    {67, 129, 4097},
                    {136, 264, 72},
                    {520, 776, 1032},
                    {1024, 1024, 1024}});
}

// D = A * B + C, for every type pair.
std::vector<wb::Shape> add_c_shapes() {
  return as_shapes({{1, 1, 1}, {17, 33, 65}, {136, 264, 72}, {255, 257, 263}}, 1);
}

// Three random shapes up to 300 in each dimension, with or without C.
std::vector<wb::Shape> random_shapes(wb::Rng& rng) {
  std::vector<wb::Shape> out;
  for (const auto& e : wb::random_gemm_shapes(rng, 3, 300, 300, 300)) {
    out.push_back(gemm_shape(e.m, e.n, e.k, static_cast<int>(rng.range(0, 1))).tag("random"));
  }
  return out;
}

// --- the float64 reference ------------------------------------------------------------------

// An input as floats (exact: every FP16, BF16 and INT8 value is a float), converted once per
// set of input values and reused by every reference row: a row reads all of B.
const std::vector<float>& floats_of(const wb::HostTensor& t) {
  struct Slot {
    const void* raw = nullptr;
    int64_t count = -1;
    uint64_t print = 0;
    std::vector<float> v;
  };
  thread_local Slot slots[2];
  thread_local int next = 0;
  // A fingerprint of the contents: new values under the same address are told apart.
  const uint64_t h = wb::fingerprint(t, 1024);
  for (auto& s : slots) {
    if (s.raw == t.raw() && s.count == t.count() && s.print == h) return s.v;
  }
  Slot& s = slots[next];
  next ^= 1;
  s.raw = t.raw();
  s.count = t.count();
  s.print = h;
  s.v.resize(static_cast<size_t>(t.count()));
  for (int64_t i = 0; i < t.count(); ++i) s.v[size_t(i)] = static_cast<float>(t.get(i));
  return s.v;
}

// Row i of D in float64: sum over p of A[i][p] * B[p][:], plus C[i][:]. Products of the
// rounded inputs are exact in double, and so are INT8 sums. B, which every row reads whole,
// is converted once (floats_of); A only a row at a time: in the large case it holds 2.5e9
// elements, and floats_of keeps a copy per reference thread.
void reference_row(const wb::RefCtx& r, int64_t i) {
  const int64_t N = r["N"], K = r["K"];
  const wb::HostTensor& a = r.in("A");
  const auto& b = floats_of(r.in("B"));
  thread_local std::vector<double> acc;
  acc.assign(static_cast<size_t>(N), 0.0);
  for (int64_t p = 0; p < K; ++p) {
    const double x = a.get(i * K + p);
    if (x == 0.0) continue;
    const float* row = b.data() + p * N;
    for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += x * row[j];
  }
  const wb::HostTensor* c = r.has("C") ? &r.in("C") : nullptr;
  for (int64_t j = 0; j < N; ++j) r.expect("D", i * N + j, acc[size_t(j)] + (c ? c->get(i * N + j) : 0.0));
}

// --- diagnosis --------------------------------------------------------------------------------

// The dot product of row i of A and column j of B over p < k_used, with A or B read the
// wrong way round when asked (needs M == K, or N == K), plus C.
double alternative(const wb::RefCtx& r, int64_t idx, int64_t k_used, bool a_col_major, bool b_col_major) {
  const int64_t N = r["N"], K = r["K"], i = idx / N, j = idx % N;
  const auto& a = r.in("A");
  const auto& b = r.in("B");
  double s = r.has("C") ? r.in("C").get(idx) : 0.0;
  for (int64_t p = 0; p < k_used; ++p) {
    const double x = a_col_major ? a.get(p * K + i) : a.get(i * K + p);
    const double y = b_col_major ? b.get(j * N + p) : b.get(p * N + j);
    s += x * y;
  }
  return s;
}

std::string diagnose(const wb::Diagnosis& d) {
  const wb::Shape& s = d.shape;
  const int64_t M = s["M"], N = s["N"], K = s["K"];
  if (d.code == wb::Code::Unwritten && d.unwritten < d.rows * d.cols) {
    return "unwritten elements: does the grid cover every tile of D, rounding up (a ceiling division), and does "
           "each warp store every element of its tiles that lies inside D?";
  }
  if (d.code != wb::Code::Wrong) return {};
  // Does the output match a plausible wrong computation on every listed element?
  const auto matches = [&](auto alt) {
    if (!d.got || !d.inputs) return false;
    const wb::Tolerance tol = wb::tolerance_for(d.inputs->specs().back().dtype, K + (with_c(s) ? 1 : 0));
    int matched = 0;
    for (int64_t idx : d.bad) {
      const double g = d.got(idx);
      if (!std::isfinite(g)) continue;
      if (!tol.allows(alt(idx), g)) return false;
      ++matched;
    }
    return matched > 0;
  };
  for (int tile : {16, 32, 64, 128, 256}) {
    const int64_t rest = K % tile;
    if (rest == 0) continue;
    if (matches([&](int64_t idx) { return alternative(*d.inputs, idx, K - rest, false, false); })) {
      return "the output equals A * B without the last K % " + std::to_string(tile) + " = " + std::to_string(rest) +
             " terms: the K remainder is left out. K = " + std::to_string(K) + " is not a multiple of " +
             std::to_string(tile) + "; load the last partial K tile with zeros past K instead of skipping it";
    }
  }
  if (M == K && matches([&](int64_t idx) { return alternative(*d.inputs, idx, K, true, false); })) {
    return "the output equals A^T * B: A was read as column-major. A is row-major (element (i, p) at A[i * K + p]): "
           "use wmma::row_major for matrix_a, with ldm = K";
  }
  if (N == K && matches([&](int64_t idx) { return alternative(*d.inputs, idx, K, false, true); })) {
    return "the output equals A * B^T: B was read as column-major. B is row-major (element (p, j) at B[p * N + j]): "
           "use wmma::row_major for matrix_b, with ldm = N";
  }
  if (d.checked > 0 && d.wrong * 10 > d.checked * 9) {
    return "nearly every element is wrong: check the fragment layouts (A and B are row-major: wmma::row_major, "
           "ldm = K for A and N for B) and the tile offsets along K";
  }
  return "wrong values in part of D: check the edges (a partial tile copied with zeros outside the matrix), the "
         "tile offsets, and that every product is accumulated in the accumulator type and rounded once, at the end";
}

// --- the op, per type pair ----------------------------------------------------------------------

template <class In, class Out>
wb::OpSpec<GemmFn<In, Out>> gemm_op(const char* dtype, std::vector<wb::Shape> shapes) {
  using Fn = GemmFn<In, Out>;
  constexpr bool kInt = std::is_integral_v<In>;
  constexpr DType kIn = wb::dtype_of<In>(), kOut = wb::dtype_of<Out>();
  const wb::Dist in_dist = kInt ? wb::dist::ints(-128, 127) : wb::dist::uniform(-1, 1);
  const wb::Dist c_dist = kInt ? wb::dist::ints(-1000, 1000) : wb::dist::uniform(-1, 1);

  auto c = wb::input("C", {"M", "N"}, kOut, c_dist);
  c.present = [](const wb::Shape& s) { return s.param("with_c") != 0; };
  const double in_bytes = kInt ? 1.0 : 2.0, out_bytes = sizeof(Out);

  // Extreme inputs.
  std::vector<wb::InputSet> sets;
  if constexpr (kInt) {
    // +-127 / -128 with random signs (the largest products), and a set whose products are
    // all positive (A and B in {-128, -127}), so that sums reach about K * 16384 and pass
    // 2^24 from K = 1033 on: an accumulator or epilogue through float loses the low bits.
    const auto same_sign = wb::dist::custom("int8 in {-128, -127} (sums past 2^24)",
                                            [](wb::HostTensor& t, const wb::Shape&, wb::Rng& rng) {
                                              for (int64_t i = 0; i < t.count(); ++i)
                                                t.set(i, rng.range(0, 1) ? -128 : -127);
                                            });
    sets.push_back({"extremes",
                    {{"A", wb::dist::extremes()}, {"B", wb::dist::extremes()}},
                    {gemm_shape(16, 16, 16), gemm_shape(17, 33, 65, 1), gemm_shape(64, 64, 1100)}});
    sets.push_back({"large_sums",
                    {{"A", same_sign}, {"B", same_sign}},
                    {gemm_shape(64, 64, 1100), gemm_shape(33, 65, 2051, 1), gemm_shape(128, 256, 4100)}});
  } else if constexpr (!std::is_same_v<Out, __half>) {
    // +-256: every product is +-65536, past the largest FP16 value (65504), so an FP16
    // accumulator overflows; the sums are exact in FP32. (Not for FP16 outputs, which
    // cannot hold the sums; no C, so that no rounding happens before the end.)
    sets.push_back({"pm256",
                    {{"A", wb::dist::ties(2, -256, 256)}, {"B", wb::dist::ties(2, -256, 256)}},
                    {gemm_shape(16, 16, 16), gemm_shape(17, 33, 65), gemm_shape(64, 64, 1100)}});
  }

  wb::Peak peak = wb::Peak::F16Tensor;
  if constexpr (std::is_same_v<In, __nv_bfloat16>) peak = wb::Peak::BF16Tensor;
  if constexpr (kInt) peak = wb::Peak::I8Tensor;

  wb::OpSpec<Fn> op{
      .name = "gemm",
      .dtype = dtype,
      .title = "D = A * B (+ C), row-major, tensor cores",
      .docs = kDocs,
      .tensors = {wb::input("A", {"M", "K"}, kIn, in_dist), wb::input("B", {"K", "N"}, kIn, in_dist), c,
                  wb::output("D", {"M", "N"}, kOut,
                             wb::tol::terms([](const wb::Shape& s) { return s["K"] + (with_c(s) ? 1 : 0); }))},
      .reference = &reference_row,
      .ref_rows = [](const wb::Shape& s) { return s["M"]; },
      .test_shapes = std::move(shapes),
      .random_shapes = &random_shapes,
      .input_sets = std::move(sets),
      .race_shapes = race_shapes(),
      .bytes =
          [=](const wb::Shape& s) {
            const double m = s["M"], n = s["N"], k = s["K"];
            return in_bytes * (m * k + k * n) + out_bytes * m * n;  // A and B read once, D written once
          },
      .flops = [](const wb::Shape& s) { return 2.0 * s["M"] * s["N"] * s["K"]; },
      .peak = peak,
      .launch =
          [](Fn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.i("M"), a.i("N"), a.i("K"), a.in<In>("A"), a.in<In>("B"), a.in<Out>("C"), a.out<Out>("D"), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = &diagnose,
      // cuBLAS's own error bounds a float kernel's (integer outputs are exact anyway).
      .yardstick = kInt ? nullptr : &cublas::gemm<In, Out>,
      .yardstick_factor = 4.0,
  };
  return op;
}

using wb::shapes::concat;

const wb::Shape kCube4096 = gemm_shape(4096, 4096, 4096);
const wb::Shape kCube8192 = gemm_shape(8192, 8192, 8192);

}  // namespace

// One type pair per input type meets every shape (FP16 -> FP32, BF16 -> BF16, INT8 -> INT32);
// the other two share those main loops and meet the edge shapes. D = A * B + C for all.
// Benchmark: by default 4096^3 in BF16 and INT8; --full adds 8192^3 BF16 and 4096^3 FP16.
WB_OPS(ch05) {
  const auto every = concat(concat(concat(chapter_shapes(), add_c_shapes()), alignment_shapes()), {large_shape()});
  const auto edges = concat(edge_shapes(), add_c_shapes());

  auto f16_f32 = gemm_op<__half, float>("f16_f32", every);
  auto f16_f16 = gemm_op<__half, __half>("f16_f16", edges);
  f16_f16.full_bench_shapes = {kCube4096};
  auto bf16_f32 = gemm_op<__nv_bfloat16, float>("bf16_f32", edges);
  // The benchmark's size, sampled: rows of D are checked on a sample.
  auto bf16_bf16 =
      gemm_op<__nv_bfloat16, __nv_bfloat16>("bf16_bf16", concat(every, {wb::Shape(kCube4096).tag("large")}));
  bf16_bf16.bench_shapes = {kCube4096};
  bf16_bf16.full_bench_shapes = {kCube8192};
  auto i8_i32 = gemm_op<int8_t, int32_t>("i8_i32", every);
  i8_i32.bench_shapes = {kCube4096};

  wb::add_op(std::move(f16_f32));
  wb::add_op(std::move(f16_f16));
  wb::add_op(std::move(bf16_f32));
  wb::add_op(std::move(bf16_bf16));
  wb::add_op(std::move(i8_i32));
}

}  // namespace ch05
