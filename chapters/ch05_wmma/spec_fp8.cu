// Chapter 5's FP8 ops (ch05.cuh says what each computes and the layouts):
//
//   fp8_quantize/bf16_e4m3     Q = E4M3(X / scale), saturating at +-448
//   gemm_fp8/e4m3_bf16         D = scale_a * scale_b * (A * B^T), per-tensor scales
//   gemm_fp8_block/e4m3_bf16   the same with a scale per 1 x 128 block of A, 128 x 128 of B
//
// Built into chch05_spec beside spec.cu (chapters/ch05_wmma/extra.cmake adds it).
//
// Inputs. A and B are drawn uniform in [-448, 448] and rounded to E4M3 (the whole range of the
// format, as quantized data fills it: q = x / scale with scale = amax / 448); the "binades"
// input set draws magnitudes log-uniform from 2^-9 (the smallest subnormal) to 448 instead, so
// that every exponent, subnormals included, is decoded. Scales are drawn in fixed ranges (the
// tolerance below is computed from their largest values): per tensor scale_a in [2^-6, 2^-5],
// scale_b in [2^-9, 2^-8] (dequantization scales are amax / 448: small); per block scale_a in
// [2^-8, 2^-4] and scale_b in [2^-10, 2^-6], a factor of 16 between blocks, so that a scale
// taken from the wrong block is far off. X of the quantize op is uniform in [-10, 10] with
// scale in [1/64, 1/48]: |X / scale| passes 448 for 7 to 30% of the elements, so saturation
// is exercised on every shape.
//
// The float64 reference works on the inputs exactly as stored (the same E4M3 values, decoded
// exactly: every E4M3 value, and every product of two, is a double), so the kernel's error is
// only its own arithmetic. The error model (gemm_tol below), per element of D, with
// P = the largest |scale_a * scale_b * a * b| the draws allow:
//   * the output rounded once to BF16: at most one BF16 step, 2 u_bf16 |ref| (u_bf16 = 2^-8,
//     the harness's unit roundoff; a step is 2u);
//   * FP32 additions over K terms: the book's rule for every GEMM (check/tolerance.h),
//     4 u_fp32 sqrt(K) |ref| plus 4 u_fp32 sqrt(K) * P sqrt(K) for cancellation near zero;
//     the scale multiplications are two FP32 roundings more, inside the same 4x;
//   * the tensor cores' own partial sums. FP8 products are exact, but Hopper's FP8 MMA keeps
//     its running sum to about 14 bits, truncated, not FP32 (DeepSeek-V3 technical report,
//     section 3.3.2, measured on H800; NVIDIA documents no figure). That is why cuBLASLt (with
//     fast accumulation off, its default) and our kernels add the tensor core's sum into an FP32
//     register sum every 128 of K. We allow 13 bits: each k = 32 instruction of a block of 128
//     loses at most 2^-13 of a partial sum of at most 128 P, four instructions per block, so
//     at most 4 * 2^-13 * 128 P = 2^-4 P per block, and ceil(K / 128) * 2^-4 * P in all (a
//     worst case: every block's error of one sign). A CUDA-core FP32 loop has none of it.
// So |got - ref| <= atol + rtol |ref| with
//   rtol = 2 u_bf16 + 4 u_fp32 sqrt(K)
//   atol = 4 u_fp32 K P + ceil(K / 128) 2^-4 P.
// At K = 1296 (per tensor, P = 24.5) that is atol = 0.27 against values of typically 170;
// the mistakes of the self-tests (a scale applied twice: a factor of 2^-11 to 2^-13; a block
// scale from the wrong block: up to 16x; a conversion without saturation: NaN) are far outside.
// The quantize op: within one E4M3 step of the exact E4M3(X / scale), i.e. 2^-3 relative
// (the widest gap between neighbours, at the bottom of a binade), 2^-9 absolute among the
// subnormals: X / scale in FP32, or X times the FP32 reciprocal, may round to the other
// neighbour of a tie.
#include <algorithm>
#include <cmath>

#include "ch05.cuh"
#include "declare/op.cuh"

namespace ch05 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch05-wmma.md";

wb::Shape mnk(int64_t m, int64_t n, int64_t k) { return wb::Shape{{"M", m}, {"N", n}, {"K", k}}; }

// Derived extents of the block scales: KB blocks along K, NB along N, scale_b's rows KBP long.
void derive_blocks(wb::Shape& s) {
  const int64_t kb = (s["K"] + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  s.set("KB", kb);
  s.set("NB", (s["N"] + kFp8ScaleBlock - 1) / kFp8ScaleBlock);
  s.set("KBP", (kb + 3) / 4 * 4);
}

// --- shapes -------------------------------------------------------------------------------
// N and K multiples of 16 (the ops' rule), M anything: tiny, odd M, K not a multiple of the
// 128-deep stages or blocks (a partial last block), N not a multiple of 128 or of a 128 x 256
// tile (partial block scales of B, partial tiles), thin, a long K, and 2048^3 (sampled rows).
std::vector<wb::Shape> gemm_shapes() {
  std::vector<wb::Shape> s = {
      mnk(1, 16, 16),       // the smallest the op allows
      mnk(2, 32, 32),       // less than one k = 32 step of wgmma in N
      mnk(17, 48, 64),      // M one past a multiple of 16, half a block of K
      mnk(64, 128, 128),    // exactly one block and one 64-row warpgroup tile
      mnk(61, 80, 144),     // prime M; K one 16 past a block
      mnk(127, 144, 272),   // N and K just past a 128 block
      mnk(129, 256, 400),   // M one past a 128 tile; K = 3 blocks + 16
      mnk(255, 272, 1040),  // partial everything, 9 blocks along K
      mnk(1000, 528, 1296),
      mnk(4096, 16, 256),  // thin: one column of tiles
      mnk(16, 4096, 256),  // wide: one row of tiles
      mnk(64, 64, 8192),   // a long K: 64 blocks of 128
      mnk(2048, 2048, 2048).tag("large"),
  };
  return s;
}

// The race pass: more than 2,000 tiles of 128 x 128 (one block per SM, each walking over many).
std::vector<wb::Shape> race_shapes() { return {mnk(4100, 8192, 128)}; }

// Past 2^31 elements of A (offsets i * K in int wrap from row 131,072 on): spec.cu's large
// case (its comment says why these numbers), here with N = 32 a multiple of 16.
wb::Shape large_shape() { return mnk(150001, 32, 16384).tag("large"); }

std::vector<wb::Shape> quantize_shapes() {
  return wb::shapes::plus_large(
      wb::shapes::table({"M", "K"}, {{1, 1}, {1, 7}, {3, 16}, {17, 33}, {64, 128}, {129, 1000}, {1023, 1025}}),
      wb::Shape{{"M", 4096}, {"K", 4096}});
}

// --- distributions ----------------------------------------------------------------------------

// Magnitudes log-uniform over every E4M3 binade, 2^-9 .. 448, random signs.
wb::Dist binades() {
  return wb::dist::custom("log-uniform magnitudes 2^-9 .. 448, random signs",
                          [](wb::HostTensor& t, const wb::Shape&, wb::Rng& rng) {
                            const double lo = std::log(std::ldexp(1.0, -9)), hi = std::log(448.0);
                            for (int64_t i = 0; i < t.count(); ++i) {
                              const double m = std::exp(rng.uniform(lo, hi));
                              t.set(i, rng.range(0, 1) ? -m : m);
                            }
                          });
}

// --- the references -------------------------------------------------------------------------

// Row i of D in float64. E4M3 values and their products are exact in double.
void gemm_row(const wb::RefCtx& r, int64_t i, bool blocked) {
  const int64_t M = r["M"], N = r["N"], K = r["K"];
  const wb::HostTensor &a = r.in("A"), &b = r.in("B"), &sa = r.in("scale_a"), &sb = r.in("scale_b");
  thread_local std::vector<double> arow;
  arow.resize(size_t(K));
  for (int64_t p = 0; p < K; ++p) arow[size_t(p)] = a.get(i * K + p);
  const int64_t kbp = blocked ? r["KBP"] : 0;
  for (int64_t j = 0; j < N; ++j) {
    double total = 0;
    for (int64_t p0 = 0; p0 < K; p0 += kFp8ScaleBlock) {
      double part = 0;
      for (int64_t p = p0; p < std::min(K, p0 + kFp8ScaleBlock); ++p) part += arow[size_t(p)] * b.get(j * K + p);
      const int64_t kb = p0 / kFp8ScaleBlock;
      total += blocked ? part * sa.get(kb * M + i) * sb.get((j / kFp8ScaleBlock) * kbp + kb) : part;
    }
    r.expect("D", i * N + j, blocked ? total : total * sa.get(0) * sb.get(0));
  }
}

// Row i of Q: E4M3(X / scale), the rounding and saturation done by HostTensor::set's E4M3 rule
// (declare/dtype.h: double_to_e4m3, checked against CUDA's own conversion in
// harness/tests/precision_test.cpp). The expected value is the rounded one.
void quantize_row(const wb::RefCtx& r, int64_t i) {
  const int64_t K = r["K"];
  const wb::HostTensor& x = r.in("X");
  const double scale = r.in("scale").get(0);
  for (int64_t p = 0; p < K; ++p) {
    const double q = wb::e4m3_to_float(wb::double_to_e4m3(x.get(i * K + p) / scale));
    r.expect("Q", i * K + p, q);
  }
}

// --- tolerance --------------------------------------------------------------------------------

// The error model of the header; p = the largest |scale_a * scale_b * a * b| of the draws.
wb::Tol gemm_tol(double p) {
  return {[p](const wb::Shape& s, DType out) {
            const double k = double(s["K"]), blocks = std::ceil(k / kFp8ScaleBlock);
            const double u32 = wb::unit_roundoff(DType::F32);
            const double rtol = 2 * wb::unit_roundoff(out) + 4 * u32 * std::sqrt(k);
            const double atol = 4 * u32 * k * p + blocks * std::ldexp(1.0, -4) * p;
            return wb::Tolerance{atol, rtol};
          },
          "FP32 sums of exact FP8 products, tensor-core partial sums promoted every 128 of K, one BF16 rounding"};
}

// --- the ops ----------------------------------------------------------------------------------

constexpr double kE4m3Max = 448.0;

wb::OpSpec<Fp8GemmFn> gemm_op(bool blocked) {
  const wb::Dist sa_dist = blocked ? wb::dist::uniform(std::ldexp(1.0, -8), std::ldexp(1.0, -4))
                                   : wb::dist::uniform(std::ldexp(1.0, -6), std::ldexp(1.0, -5));
  const wb::Dist sb_dist = blocked ? wb::dist::uniform(std::ldexp(1.0, -10), std::ldexp(1.0, -6))
                                   : wb::dist::uniform(std::ldexp(1.0, -9), std::ldexp(1.0, -8));
  const double p = kE4m3Max * kE4m3Max * sa_dist.b * sb_dist.b;
  const wb::Dist in = wb::dist::uniform(-kE4m3Max, kE4m3Max);
  auto scale_a =
      blocked ? wb::input("scale_a", {"KB", "M"}, DType::F32, sa_dist) : wb::input("scale_a", {}, DType::F32, sa_dist);
  auto scale_b = blocked ? wb::input("scale_b", {"NB", "KBP"}, DType::F32, sb_dist)
                         : wb::input("scale_b", {}, DType::F32, sb_dist);
  auto shapes = gemm_shapes();
  if (!blocked) shapes.push_back(large_shape());
  const std::vector<wb::Shape> few = {mnk(17, 48, 64), mnk(127, 144, 272), mnk(255, 272, 1040)};
  wb::OpSpec<Fp8GemmFn> op{
      .name = blocked ? "gemm_fp8_block" : "gemm_fp8",
      .dtype = "e4m3_bf16",
      .title = blocked ? "D = A * B^T, FP8 E4M3 in, BF16 out, a scale per 1 x 128 block of A and 128 x 128 of B"
                       : "D = scale_a * scale_b * A * B^T, FP8 E4M3 in, BF16 out",
      .docs = kDocs,
      .tensors = {wb::input("A", {"M", "K"}, DType::E4M3, in), wb::input("B", {"N", "K"}, DType::E4M3, in), scale_a,
                  scale_b, wb::output("D", {"M", "N"}, DType::BF16, gemm_tol(p))},
      .derive = blocked ? std::function<void(wb::Shape&)>(&derive_blocks) : nullptr,
      .reference = [blocked](const wb::RefCtx& r, int64_t i) { gemm_row(r, i, blocked); },
      .ref_rows = [](const wb::Shape& s) { return s["M"]; },
      .test_shapes = std::move(shapes),
      .input_sets = {{"binades", {{"A", binades()}, {"B", binades()}}, few}},
      .race_shapes = race_shapes(),
      .bytes =
          [blocked](const wb::Shape& s) {
            const double m = s["M"], n = s["N"], k = s["K"];
            const double scales = blocked ? 4.0 * (m + n / 128) * std::ceil(k / 128) : 8.0;
            return m * k + n * k + 2.0 * m * n + scales;  // A, B (1 byte each), D (BF16), scales
          },
      .flops = [](const wb::Shape& s) { return 2.0 * s["M"] * s["N"] * s["K"]; },
      // Hopper's FP8 and INT8 tensor rates are equal (1,979 TFLOPS / TOPS dense on an H100
      // SXM, docs/precision.md): the harness's INT8 ceiling stands for both.
      .peak = wb::Peak::I8Tensor,
      .launch =
          [](Fp8GemmFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.i("M"), a.i("N"), a.i("K"), a.in<__nv_fp8_e4m3>("A"), a.in<__nv_fp8_e4m3>("B"), a.in<float>("scale_a"),
               a.in<float>("scale_b"), a.out<__nv_bfloat16>("D"), st);
          },
      .checks = {.deterministic = 1},
      .refused = {{mnk(16, 16, 8), "K < 16"},
                  {mnk(16, 16, 40), "K not a multiple of 16"},
                  {mnk(16, 24, 32), "N not a multiple of 16"}},
  };
  op.bench_shapes = {mnk(8192, 8192, 8192)};
  op.full_bench_shapes = {mnk(4096, 4096, 4096)};
  return op;
}

wb::OpSpec<Fp8QuantizeFn> quantize_op() {
  return {
      .name = "fp8_quantize",
      .dtype = "bf16_e4m3",
      .title = "Q = E4M3(X / scale), saturating at +-448",
      .docs = kDocs,
      .tensors = {wb::input("X", {"M", "K"}, DType::BF16, wb::dist::uniform(-10, 10)),
                  wb::input("scale", {}, DType::F32, wb::dist::uniform(1.0 / 64, 1.0 / 48)),
                  wb::output("Q", {"M", "K"}, DType::E4M3, wb::tol::abs_rel(std::ldexp(1.0, -9), 0.125))},
      .reference = &quantize_row,
      .ref_rows = [](const wb::Shape& s) { return s["M"]; },
      .test_shapes = quantize_shapes(),
      .bench_shapes = {wb::Shape{{"M", 8192}, {"K", 8192}}},
      .bytes = [](const wb::Shape& s) { return 3.0 * s["M"] * s["K"]; },  // 2 bytes read, 1 written
      .flops = [](const wb::Shape& s) { return double(s["M"]) * s["K"]; },
      .launch =
          [](Fp8QuantizeFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.i("M"), a.i("K"), a.in<__nv_bfloat16>("X"), a.in<float>("scale"), a.out<__nv_fp8_e4m3>("Q"), st);
          },
      .checks = {.deterministic = 1},
  };
}

}  // namespace

// Benchmark: 8192^3 for both GEMMs (--full adds 4096^3), 8192 x 8192 for the quantizer.
WB_OPS(ch05_fp8) {
  wb::add_op(quantize_op());
  wb::add_op(gemm_op(false));
  wb::add_op(gemm_op(true));
}

}  // namespace ch05
