// Chapter 4's op, declared once. The harness makes the tests, the benchmark rows and the
// broken-kernel rejections from this declaration (harness/declare/op.cuh).
//
//   sgemm/f32   C = alpha * A * B + beta * C, FP32, row-major, three leading dimensions
//               ex1 (naive), ex2 (shared-memory tiles), ex3 (register tiles)
//
// The leading dimensions are the widths plus padding columns:
//   lda = max(1, K) + pad,  ldb = max(1, N) + 2 * pad,  ldc = max(1, N) + 3 * pad
// so that every stride differs from every width when pad > 0. pad = 4 keeps rows 16-byte
// aligned when the widths are multiples of 4 (the vector path); an odd pad breaks the
// alignment of every other row (the scalar path). The padding of A and B holds NaN: a
// kernel that reads it multiplies NaN in. C is read and written: with beta != 0 it starts
// random; with beta == 0 it starts as NaN poison and must not be read (0 * NaN = NaN), so
// an element still holding the poison afterwards was never written. C's padding must come
// back with the bits it had.
//
// The large case (tag "large", after every other shape, one argument set): A passes 2^31
// elements, so a kernel that keeps row * lda (or row * lda + p) in an int reads the wrong
// rows. See large_shape() for the numbers.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ch04.cuh"
#include "declare/op.cuh"

namespace ch04 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch04-tiled-gemm.md";

// The benchmark's operation: C = 1 * A * B + 0.5 * C (C is read and written), packed rows.
constexpr double kBenchAlpha = 1.0, kBenchBeta = 0.5;

wb::Shape gemm_shape(int64_t m, int64_t n, int64_t k) { return wb::Shape{{"M", m}, {"N", n}, {"K", k}}; }

// The three argument sets every test shape runs with: packed with beta = 0 (C is output
// only); padded (pad 4) with beta != 0 (C is read); an odd pad (rows misaligned for float4)
// with beta != 0.
std::vector<wb::Shape> with_standard_args(const std::vector<wb::Shape>& base) {
  struct Args {
    int64_t pad;
    double alpha, beta;
  };
  constexpr Args kSets[] = {{0, 1.0, 0.0}, {4, -1.5, 0.75}, {3, 0.75, -1.25}};
  std::vector<wb::Shape> out;
  for (const auto& s : base) {
    for (const auto& a : kSets) {
      wb::Shape t = s;
      t.set("pad", a.pad).set_param("alpha", a.alpha).set_param("beta", a.beta);
      out.push_back(t);
    }
  }
  return out;
}

// The large case: 150,001 x 32 x 16,384 with pad 4 (lda = 16,388). A holds 2,458,216,388
// elements, and row * lda passes 2^31 - 1 from row 131,041 on: the last 12.6% of the rows,
// about 1,000 of the ~8,200 rows the check samples (C's 4.8 M elements are checked on whole
// rows covering about 2^18 of them, the first and last row among them). Why these numbers:
//   * memory: A is 9.8 GB on the host and as much on the GPU; B (2.6 MB) and C (26 MB)
//     are small;
//   * work: 2 M N K = 0.16 TFLOP, under a second for every step of the ladder (v1_naive,
//     the slowest, ran 0.5 TFLOPS at 2048^3 on an H100: about 0.3 s); the float64 reference
//     of the sampled rows is 4.3 G multiply-adds, shared out to the host's cores; the inputs
//     are uniform, drawn in parallel chunks (fast), as for every other shape;
//   * grid limits: a kernel with one thread per element and 8 rows per block needs
//     M / 8 = 18,751 blocks along y (the limit is 65,535): the long K keeps M small. With
//     K = 4,096 the wrap would need M > 524,288, past what such a grid can hold;
//   * paths: N, K and the pad multiples of 4 (the float4 paths run, past the wrap too), M odd
//     (a partial tile at the bottom, beyond the wrap);
//   * one argument set, not with_standard_args' three (each would allocate 9.8 GB again):
//     pad 4 with beta != 0, so that lda differs from K and C is read;
//   * the reference, cuBLAS SGEMM, takes int sizes and leading dimensions (m = 32,
//     n = 150,001, k = 16,384, lda = 16,388 all fit) and addresses the matrices in 64 bits:
//     its own run of this case (cublas_sgemm_fp32) shows it.
// Its tolerance is the op's rule for a sum of K = 16,384 terms (+1 for beta * C).
wb::Shape large_shape() {
  wb::Shape s = gemm_shape(150001, 32, 16384);
  s.set("pad", 4).set_param("alpha", -1.5).set_param("beta", 0.75);
  return s.tag("large");
}

std::vector<wb::Shape> test_shapes() {
  // Tiny, a single row or column of C, primes, one off 128 and 256, tall and thin, K = 1,
  // a long K, 1024^3 and 2048^3 (sampled).
  auto base = wb::shapes::gemm("M", "N", "K", 2048);
  for (auto& s : base) {
    if (s["M"] == 2048) s.tag("large");
  }
  base.push_back(gemm_shape(257, 255, 263));  // one off 256 in every dimension, the other way round
  // Empty problems: M or N = 0 launches nothing; K = 0 leaves C = beta * C.
  for (const auto& s :
       {gemm_shape(0, 5, 7), gemm_shape(5, 0, 7), gemm_shape(0, 0, 0), gemm_shape(5, 7, 0), gemm_shape(130, 129, 0)}) {
    base.push_back(wb::Shape(s).tag("empty"));
  }
  auto out = with_standard_args(base);
  out.push_back(large_shape());  // after the argument sets: one large case, not three
  return out;
}

// Seeded random shapes up to 700^3, each with a random pad, alpha and beta.
std::vector<wb::Shape> random_shapes(wb::Rng& rng) {
  const double alphas[] = {1.0, -0.5, 2.0}, betas[] = {0.0, 1.0, -0.25};
  std::vector<wb::Shape> out;
  for (int i = 0; i < 4; ++i) {
    wb::Shape s = gemm_shape(rng.range(1, 700), rng.range(1, 700), rng.range(1, 700));
    s.set("pad", rng.range(0, 5));
    s.set_param("alpha", alphas[rng.range(0, 2)]).set_param("beta", betas[rng.range(0, 2)]);
    out.push_back(s.tag("random"));
  }
  return out;
}

wb::Shape bench_shape(int64_t m, int64_t n, int64_t k) {
  wb::Shape s = gemm_shape(m, n, k);
  s.set("pad", 0).set_param("alpha", kBenchAlpha).set_param("beta", kBenchBeta);
  return s;
}

// Each element of C is a sum of K products (plus beta * C when beta != 0), scaled by alpha
// and beta; inputs are uniform in [-1, 1).
wb::Tol gemm_tolerance() {
  return {[](const wb::Shape& s, DType t) {
            const double alpha = s.param("alpha"), beta = s.param("beta");
            const double scale = std::max({std::fabs(alpha), std::fabs(beta), 1e-6});
            return wb::tolerance_for(t, s["K"] + (beta != 0.0 ? 1 : 0), scale);
          },
          "a sum over K (plus beta * C), scaled by max(|alpha|, |beta|)"};
}

// C's starting contents: random when beta != 0 (C is read), NaN poison when beta == 0
// (C must not be read; an element still holding the poison was never written).
wb::Dist c_start() {
  return wb::dist::custom("uniform(-1, 1) when beta != 0, else NaN poison",
                          [](wb::HostTensor& t, const wb::Shape& s, wb::Rng& rng) {
                            if (s.param("beta") == 0.0) {
                              t.fill_poison();
                              return;
                            }
                            for (int64_t i = 0; i < t.count(); ++i) t.set(i, rng.uniform(-1.0, 1.0));
                          });
}

// The learner-facing hints of the failures this chapter sees most.
std::string diagnose(const wb::Diagnosis& d) {
  if (d.code == wb::Code::NaN && d.shape.param_or("beta", 1.0) == 0.0) {
    return "with beta == 0, C is output only and held NaN before the call; a kernel that reads it (0 * NaN = NaN) "
           "writes NaN. Write alpha * acc without reading C when beta == 0 (or the kernel reads past the edge of "
           "A or B: their padding holds NaN)";
  }
  if (d.code == wb::Code::Unwritten) {
    return "unwritten elements: does the grid cover every tile of C, rounding up (a ceiling division), and does "
           "each thread store every element it owns?";
  }
  return {};
}

wb::OpSpec<SgemmFn> sgemm() {
  return {
      .name = "sgemm",
      .dtype = "f32",
      .title = "C = alpha*A*B + beta*C, FP32; reference: cuBLAS SGEMM with TF32 off",
      .docs = kDocs,
      .tensors =
          [] {
            auto a = wb::input("A", {"M", "lda"}, DType::F32);
            a.view = {"M", "K"};
            auto b = wb::input("B", {"K", "ldb"}, DType::F32);
            b.view = {"K", "N"};
            auto c = wb::output("C", {"M", "ldc"}, DType::F32, gemm_tolerance());
            c.role = wb::TensorRole::InOut;
            c.dist = c_start();
            c.view = {"M", "N"};
            return std::vector<wb::TensorSpec>{a, b, c};
          }(),
      .derive =
          [](wb::Shape& s) {
            const int64_t n = std::max<int64_t>(1, s["N"]), k = std::max<int64_t>(1, s["K"]), pad = s["pad"];
            s.set("lda", k + pad).set("ldb", n + 2 * pad).set("ldc", n + 3 * pad);
          },
      // One row of C in float64: alpha * A[i, :] . B + beta * C_start[i, :] (C not read when
      // beta == 0). B is walked row by row, so the loop streams it.
      .reference =
          [](const wb::RefCtx& r, int64_t i) {
            const int64_t n = r["N"], k = r["K"], lda = r["lda"], ldb = r["ldb"], ldc = r["ldc"];
            const double alpha = r.param("alpha"), beta = r.param("beta");
            const float* a = static_cast<const float*>(r.in("A").raw()) + i * lda;
            const float* b = static_cast<const float*>(r.in("B").raw());
            const wb::HostTensor& c = r.in("C");
            std::vector<double> acc(static_cast<size_t>(n), 0.0);
            for (int64_t p = 0; p < k; ++p) {
              const double ap = a[p];
              const float* brow = b + p * ldb;
              for (int64_t j = 0; j < n; ++j) acc[j] += ap * double(brow[j]);
            }
            for (int64_t j = 0; j < n; ++j) {
              r.expect("C", i * n + j, alpha * acc[j] + (beta != 0.0 ? beta * c.get(i * ldc + j) : 0.0));
            }
          },
      .ref_rows = [](const wb::Shape& s) { return s["M"]; },
      .test_shapes = test_shapes(),
      .random_shapes = random_shapes,
      // The race pass: 4100 x 8200 x 64, more than 2,000 tiles of 128 x 128 (8,700 of 64 x 64):
      // every block of a grid that fits on the GPU at once computes two tiles or more, so a
      // persistent kernel whose next tile's first loads race its last reads of the shared tiles
      // meets racecheck; K = 64 is two K steps or more of every tile depth.
      .race_shapes = {bench_shape(4100, 8200, 64)},
      .bench_shapes = {bench_shape(4096, 4096, 4096)},
      .full_bench_shapes = {bench_shape(1024, 1024, 1024), bench_shape(2048, 2048, 2048),
                            bench_shape(4096, 1024, 8192)},
      // Minimum traffic of one call: A and B read once, C read once and written once.
      .bytes =
          [](const wb::Shape& s) {
            const double m = s["M"], n = s["N"], k = s["K"];
            return 4.0 * (m * k + k * n + 2.0 * m * n);
          },
      .flops = [](const wb::Shape& s) { return 2.0 * s["M"] * s["N"] * s["K"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](SgemmFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.i("M"), a.i("N"), a.i("K"), static_cast<float>(a.param("alpha")), a.in<float>("A"), a.i("lda"),
               a.in<float>("B"), a.i("ldb"), static_cast<float>(a.param("beta")), a.out<float>("C"), a.i("ldc"), st);
          },
      // Tiled kernels share tiles through shared memory: a missing barrier shows as two runs
      // on the same inputs that disagree.
      .checks = {.deterministic = 1},
      .diagnose = diagnose,
  };
}

}  // namespace

WB_OPS(ch04) { wb::add_op(sgemm()); }

}  // namespace ch04
