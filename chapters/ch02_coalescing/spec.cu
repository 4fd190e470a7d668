// Chapter 2's ops, declared once. The harness makes the tests, the benchmark rows and the
// broken-kernel rejections from these declarations (harness/declare/op.cuh).
//
//   strided_copy/f32   out[i] = in[i * stride]             ex1
//   transpose/f32      out (cols x rows) = in^T            ex2 (naive), ex3 (tiled)
//   transpose/bf16     the same on BF16 elements           ex4
//
// Copies and transposes move bits without arithmetic, so every tolerance is exact: a result
// is either the input element itself or wrong.
//
// GB/s counts the bytes an op must move: for a transpose 2 * rows * cols * sizeof(T) (read
// once, written once); for the strided copy 8 * n, the floats used. The wasted parts of the
// sectors a stride drags in are not counted, which is the point of that experiment. The
// chapter's target: the best FP32 transpose at 8192 x 8192 reaches >= 90 % of the measured
// copy bandwidth (%meas).
//
// Beyond the catalogue of shapes:
//   * a large case per op (tag "large") whose indices pass 2^31: the strided copy reads
//     in[i * stride] past element 2^31, the transposes hold more than 2^31 elements, so an
//     index or offset kept in an int wraps;
//   * tails for vector paths: a row length that is a multiple of 4 (or 8) with a row count
//     that is not, and the reverse, so a 4 x 4 (or 8-wide) vector path that checks only one
//     of the two meets the misaligned or ragged side;
//   * race shapes (OpSpec::race_shapes): enough tiles that every block of any grid that fits
//     on the GPU at once transposes at least two, so a persistent transpose that reuses its
//     tile without a barrier at the end of each iteration meets the race pass.
#include "ch02.cuh"
#include "declare/op.cuh"

namespace ch02 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch02-coalescing.md";

// --- strided copy --------------------------------------------------------------------------

// Strides: a plain copy, half the sectors wasted, an odd one, and one sector per element.
constexpr int64_t kStrides[] = {1, 2, 7, 32};

wb::Shape copy_shape(int64_t n, int64_t stride) { return wb::Shape{{"n", n}, {"stride", stride}}; }

// 2^26 + 2^20 outputs at stride 32: the last offsets read, (n - 1) * 32, pass 2^31.
constexpr int64_t kLargeCopyN = (int64_t{1} << 26) + (int64_t{1} << 20);

wb::OpSpec<StridedCopyFn> strided_copy() {
  return {
      .name = "strided_copy",
      .dtype = "f32",
      .title = "out[i] = in[i * stride]",
      .docs = kDocs,
      .tensors = {wb::input("in", {"in_len"}, DType::F32), wb::output("out", {"n"}, DType::F32, wb::tol::exact())},
      // `in` holds (n - 1) * stride + 1 floats: the last one read is in[(n - 1) * stride].
      .derive = [](wb::Shape& s) { s.set("in_len", s["n"] > 0 ? (s["n"] - 1) * s["stride"] + 1 : 0); },
      .reference = [](const wb::RefCtx& r, int64_t i) { r.expect("out", i, r.in("in").get(i * r["stride"])); },
      .ref_rows = [](const wb::Shape& s) { return s["n"]; },
      .test_shapes =
          [] {
            std::vector<wb::Shape> out;
            for (int64_t n : wb::sizes_1d(int64_t{1} << 20)) {
              for (int64_t stride : kStrides) out.push_back(copy_shape(n, stride));
            }
            // i * stride passes 2^31 for the last 2^20 elements: 8.7 GB of input, 0.3 GB of output.
            return wb::shapes::plus_large(std::move(out), copy_shape(kLargeCopyN, 32));
          }(),
      .random_shapes =
          [](wb::Rng& rng) {
            std::vector<wb::Shape> out;
            for (int64_t n : wb::random_sizes_1d(rng, 4, int64_t{1} << 20)) {
              out.push_back(copy_shape(n, rng.range(1, 40)).tag("random"));
            }
            return out;
          },
      // The headline: 2^26 floats at stride 1, the same bytes as an 8192 x 8192 FP32
      // transpose (its yardstick). --full: the same 2^24 useful floats at growing strides
      // (the input grows with the stride: 1 GiB at stride 16).
      .bench_shapes = {copy_shape(int64_t{1} << 26, 1)},
      .full_bench_shapes = {copy_shape(int64_t{1} << 24, 1), copy_shape(int64_t{1} << 24, 2),
                            copy_shape(int64_t{1} << 24, 4), copy_shape(int64_t{1} << 24, 8),
                            copy_shape(int64_t{1} << 24, 16)},
      .bytes = [](const wb::Shape& s) { return 8.0 * s["n"]; },
      .flops = [](const wb::Shape&) { return 0.0; },
      .peak = wb::Peak::FP32,
      .launch = [](StridedCopyFn* fn, const wb::Args& a,
                   cudaStream_t st) { fn(a.in<float>("in"), a.out<float>("out"), a.i("n"), a.i("stride"), st); },
  };
}

// --- transposes ----------------------------------------------------------------------------

wb::Shape matrix(int64_t rows, int64_t cols) { return wb::Shape{{"rows", rows}, {"cols", cols}}; }

// The book's shape catalogue, plus shapes for kernels that move 4-element vectors through
// 64 x 64 tiles: multiples of 4 that are not multiples of 64, and exact tiles; then the
// vector tails: rows a multiple of 4 (or 8) and cols not, and the reverse, each more than a
// tile; and the large case, more than 2^31 elements (multiples of 8: the vector paths take
// it): 4.3 GB per BF16 matrix, 8.6 GB per FP32 one, in and out.
std::vector<wb::Shape> transpose_shapes() {
  const auto tiles = wb::shapes::table({"rows", "cols"},
                                       {{4, 4}, {4, 8}, {8, 4}, {64, 64}, {60, 68}, {68, 196}, {132, 260}, {192, 128}});
  const auto tails = wb::shapes::table({"rows", "cols"}, {{257, 256},
                                                          {256, 257},
                                                          {130, 68},
                                                          {68, 130},
                                                          {1003, 1000},
                                                          {1000, 1003},
                                                          {36, 1002},
                                                          {1002, 36},
                                                          {69, 264},
                                                          {264, 69}});
  auto s = wb::shapes::concat(wb::shapes::concat(wb::shapes::rows_by_cols("rows", "cols", 2048), tiles), tails);
  return wb::shapes::plus_large(std::move(s), matrix(46344, 46344));
}

// The race pass: 4100 x 5004 is about 20 M elements, 5,000 tiles of 64 x 64 (20,000 of 32 x 32);
// a grid that fits on the GPU at once holds at most about 148 x 2048 threads, so every block
// of it moves at least two tiles of up to 32 elements per thread. Multiples of 4 (the vector
// path) with partial tiles at both edges.
std::vector<wb::Shape> transpose_race_shapes() { return {matrix(4100, 5004)}; }

// Four random shapes, and each again rounded up to multiples of 4, where vectorized kernels
// take their fast path.
std::vector<wb::Shape> random_transpose_shapes(wb::Rng& rng) {
  std::vector<wb::Shape> out;
  for (const auto& e : wb::random_shapes_2d(rng, 4, 3000, 3000)) {
    out.push_back(matrix(e.rows, e.cols).tag("random"));
    out.push_back(matrix((e.rows + 3) / 4 * 4, (e.cols + 3) / 4 * 4).tag("random"));
  }
  return out;
}

// `in` is rows x cols, `out` is cols x rows. A reference row is a row of the OUTPUT: out row
// c holds input column c, out[c][r] = in[r][c].
template <class Fn, class T>
wb::OpSpec<Fn> transpose(const char* dtype, DType t, wb::Peak peak) {
  return {
      .name = "transpose",
      .dtype = dtype,
      .title = "out[c][r] = in[r][c]",
      .docs = kDocs,
      .tensors = {wb::input("in", {"rows", "cols"}, t), wb::output("out", {"cols", "rows"}, t, wb::tol::exact())},
      .reference =
          [](const wb::RefCtx& r, int64_t c) {
            const auto& in = r.in("in");
            const int64_t rows = r["rows"], cols = r["cols"];
            for (int64_t row = 0; row < rows; ++row) r.expect("out", c * rows + row, in.get(row * cols + c));
          },
      .ref_rows = [](const wb::Shape& s) { return s["cols"]; },
      .test_shapes = transpose_shapes(),
      .random_shapes = random_transpose_shapes,
      .race_shapes = transpose_race_shapes(),
      .bench_shapes = {matrix(8192, 8192)},
      .full_bench_shapes = t == DType::F32 ? std::vector<wb::Shape>{matrix(4096, 16384), matrix(16385, 1023)}
                                           : std::vector<wb::Shape>{matrix(16385, 1023)},
      .bytes = [](const wb::Shape& s) { return 2.0 * sizeof(T) * s["rows"] * s["cols"]; },
      .flops = [](const wb::Shape&) { return 0.0; },
      .peak = peak,
      .launch = [](Fn* fn, const wb::Args& a,
                   cudaStream_t st) { fn(a.in<T>("in"), a.out<T>("out"), a.i("rows"), a.i("cols"), st); },
  };
}

}  // namespace

WB_OPS(ch02) {
  // The FP32 transpose first: its 8192 x 8192 row is the chapter's headline.
  wb::add_op(transpose<TransposeF32Fn, float>("f32", DType::F32, wb::Peak::FP32));
  wb::add_op(transpose<TransposeBF16Fn, __nv_bfloat16>("bf16", DType::BF16, wb::Peak::BF16Tensor));
  wb::add_op(strided_copy());
}

}  // namespace ch02
