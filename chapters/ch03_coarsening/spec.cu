// Chapter 3's ops, declared once. The harness makes the tests, the benchmark rows and the
// broken-kernel rejections from these declarations (harness/declare/op.cuh).
//
//   sum/f32        *out = x[0] + ... + x[n-1]                      ex1
//   max/f32        *out = max(x[0], ..., x[n-1]), exact            ex2
//   sum/bf16       the sum of BF16 elements, FP32 accumulate       ex3
//   row_sum/f32    out[r] = the sum of row r of a rows x cols x    ex4
//
// The inputs are built to catch the usual reduction bugs at any length:
//   * sums: values uniform in [-1, 1), and the LAST element (of the array, or of each row)
//     is a large value in +-[16, 32): a kernel that skips the tail is off by more than the
//     tolerance even at 2^24 elements, where one ordinary element would hide in it;
//   * max: every value is negative (a kernel that starts from 0 returns 0), and the max
//     sits where the input set puts it: at a random position, first (max_first) or last
//     (max_last);
//   * n = 0: the sum of nothing is 0, the max of nothing is -infinity;
//   * past the end of every input the harness puts NaN, and on the second call unmapped
//     memory: a kernel that uses x[n] gets NaN, one that only loads it faults.
// Every reduction runs at least twice on one workspace (the check, then a second call with
// new inputs): a counter that is not reset, or a total that is not zeroed, is caught there.
//
// Determinism, decided per op:
//   * the sums (sum/f32, sum/bf16, row_sum/f32) do NOT have to give the same bits twice. An
//     atomicAdd of each block's partial into the result is the classic grid reduction and is
//     accepted: the blocks arrive in a different order every run, so the last bits of the
//     result change, but the tolerance (wb::tolerance_for, growing with the length) leaves
//     room for the rounding of whatever order a parallel sum adds its partials in
//     (solutions/ch03_coarsening/v7_atomic_sum.cu is checked against it). Races are still
//     caught: as wrong values, and by the race pass (compute-sanitizer racecheck).
//   * the max keeps a determinism run: a max is exact in any order, atomics included, so a
//     correct kernel always writes the same bits, and a third run that differs is a race.
// And the cases that catch the classic slips:
//   * large cases (tag "large"): n = 2^31 - 1, the largest the int interface takes (8.6 GB in
//     FP32, 4.3 GB in BF16), and a row_sum of more than 2^31 elements whose last rows start
//     past 2^31: an index, a stride of a grid-stride loop or a row offset kept in an int wraps;
//   * max: rows of -infinity (a masked value) with at most one finite value: the max of them
//     is -infinity, which a max started from -FLT_MAX never returns;
//   * race shapes (OpSpec::race_shapes): 10^7 elements, 20,011 rows of 300 and 9,473 rows of
//     4,100, so that every block of a grid that fits on the GPU at once loops at least twice
//     over its chunks or rows: a block reduction reused in the next iteration without a
//     barrier meets the race pass.
//
// Bytes are the minimum traffic: the input read once (4 bytes per FP32 element, 2 per BF16),
// plus one float per row for row sums (4 bytes in all for a full reduction, left out).
#include <algorithm>
#include <cmath>

#include "ch03.cuh"
#include "declare/op.cuh"
#include "runtime/parallel.h"

namespace ch03 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch03-coarsening.md";

// The largest n the launchers' int takes: every index, and every stride of a grid-stride
// loop that steps past it, must be computed in 64 bits.
constexpr int64_t kLargestInt = (int64_t{1} << 31) - 1;

// Lengths: empty, then the book's 1-D catalogue (tiny, primes, one off every block size,
// 2^20 + 1, 2^24 and 2^24 + 3), then n = 2^31 - 1.
std::vector<wb::Shape> reduce_sizes(bool large = true) {
  auto s = wb::shapes::sizes("n", int64_t{1} << 24);
  s.insert(s.begin(), wb::Shape{{"n", 0}}.tag("empty"));
  if (large) s.push_back(wb::Shape{{"n", kLargestInt}}.tag("large"));
  return s;
}

// The race pass: 10^7 elements. A grid that fits on the GPU at once holds at most about
// 148 x 2048 threads; at up to 16 elements per thread per trip every block loops twice.
std::vector<wb::Shape> reduce_race_shapes() { return {wb::Shape{{"n", 9999991}}}; }

std::function<std::vector<wb::Shape>(wb::Rng&)> random_sizes() {
  return [](wb::Rng& rng) {
    std::vector<wb::Shape> out;
    for (int64_t n : wb::random_sizes_1d(rng, 4, int64_t{1} << 22)) out.push_back(wb::Shape{{"n", n}}.tag("random"));
    return out;
  };
}

wb::Shape len(int64_t n) { return wb::Shape{{"n", n}}; }

// A large value for the last element of a sum: +-[16, 32).
double tail_marker(wb::Rng& rng) {
  const double m = rng.uniform(16.0, 32.0);
  return (rng.next() & 1) ? m : -m;
}

// Sums: uniform in [-1, 1), and the last element of every row of `cols` elements a tail
// marker (a full reduction is one row of n).
wb::Dist sum_input(const char* cols_dim) {
  const std::string cols = cols_dim;
  return wb::dist::custom("uniform(-1, 1), the last element of each row in +-[16, 32)",
                          [cols](wb::HostTensor& t, const wb::Shape& s, wb::Rng& rng) {
                            wb::fill(t, wb::dist::uniform(-1, 1), s, rng.next());
                            const int64_t c = s[cols];
                            if (c <= 0) return;
                            for (int64_t end = c; end <= t.count(); end += c) t.set(end - 1, tail_marker(rng));
                          });
}

// Max: uniform in [-2, -1), with a single larger value (in [-1, -0.5)) first, last, or at a
// random position.
enum class MaxAt { First, Last, Random };
wb::Dist max_input(MaxAt at) {
  const char* where = at == MaxAt::First ? "first" : at == MaxAt::Last ? "last" : "at a random position";
  return wb::dist::custom(
      std::string("uniform(-2, -1), the max in [-1, -0.5) ") + where,
      [at](wb::HostTensor& t, const wb::Shape& s, wb::Rng& rng) {
        wb::fill(t, wb::dist::uniform(-2, -1), s, rng.next());
        const int64_t n = t.count();
        if (n == 0) return;
        const int64_t pos = at == MaxAt::First ? 0 : at == MaxAt::Last ? n - 1 : rng.range(0, n - 1);
        t.set(pos, rng.uniform(-1.0, -0.5));
      });
}

// The float64 sum of x[0, n), as the device holds it (BF16 already rounded); shared out to
// the machine's cores (2^31 elements one after another take seconds).
void sum_reference(const wb::RefCtx& r, int64_t) {
  const auto& x = r.in("x");
  const double s = wb::parallel_fold(
      r["n"], 0.0,
      [&](int64_t begin, int64_t end) {
        double part = 0;
        for (int64_t i = begin; i < end; ++i) part += x.get(i);
        return part;
      },
      [](double a, double b) { return a + b; });
  r.expect("out", 0, s);
}

// x of -infinity (masked values): everywhere, or everywhere but one finite value far below
// zero at a random position. The max is -infinity, or that value.
wb::Dist masked_input(bool one_finite) {
  return wb::dist::custom(one_finite ? "-inf everywhere but one value in [-1e30, -1e20)" : "-inf everywhere",
                          [one_finite](wb::HostTensor& t, const wb::Shape&, wb::Rng& rng) {
                            for (int64_t i = 0; i < t.count(); ++i) t.set(i, -INFINITY);
                            if (one_finite && t.count() > 0)
                              t.set(rng.range(0, t.count() - 1), rng.uniform(-1e30, -1e20));
                          });
}

// A full reduction's launcher (sum or max) called on the harness's x of n elements, out and
// workspace.
template <class Fn, class T>
void launch_reduce(Fn* fn, const wb::Args& a, cudaStream_t st) {
  fn(a.in<T>("x"), a.i("n"), a.out<float>("out"), a.workspace(), a.workspace_bytes(), st);
}

template <class Fn, class T>
wb::OpSpec<Fn> sum(const char* dtype, DType t, std::vector<wb::Shape> bench, std::vector<wb::Shape> full_bench) {
  return {
      .name = "sum",
      .dtype = dtype,
      .title = "*out = x[0] + ... + x[n-1], FP32 accumulate",
      .docs = kDocs,
      .tensors = {wb::input("x", {"n"}, t, sum_input("n")), wb::output("out", {}, DType::F32, wb::tol::sum_of({"n"}))},
      .reference = sum_reference,
      .ref_rows = [](const wb::Shape&) { return int64_t{1}; },
      .test_shapes = reduce_sizes(),
      .random_shapes = random_sizes(),
      .race_shapes = reduce_race_shapes(),
      .bench_shapes = std::move(bench),
      .full_bench_shapes = std::move(full_bench),
      .bytes = [](const wb::Shape& s) { return double(sizeof(T)) * s["n"]; },
      .flops = [](const wb::Shape& s) { return 1.0 * s["n"]; },
      .peak = wb::Peak::FP32,
      .launch = launch_reduce<Fn, T>,
      // Any order of additions is accepted (see the top of this file): no determinism run.
      .checks = {.deterministic = 0},
  };
}

wb::OpSpec<ReduceFn> maximum() {
  return {
      .name = "max",
      .dtype = "f32",
      .title = "*out = max(x[0], ..., x[n-1])",
      .docs = kDocs,
      // No rounding happens in a max: the result is one of the inputs, exactly.
      .tensors = {wb::input("x", {"n"}, DType::F32, max_input(MaxAt::Random)),
                  wb::output("out", {}, DType::F32, wb::tol::exact())},
      .reference =
          [](const wb::RefCtx& r, int64_t) {
            const auto& x = r.in("x");
            const double m = wb::parallel_fold(  // the max of no elements: -inf, the identity of max
                r["n"], -INFINITY,
                [&](int64_t begin, int64_t end) {
                  double part = -INFINITY;
                  for (int64_t i = begin; i < end; ++i) part = std::max(part, x.get(i));
                  return part;
                },
                [](double a, double b) { return std::max(a, b); });
            r.expect("out", 0, m);
          },
      .ref_rows = [](const wb::Shape&) { return int64_t{1}; },
      // The large case has its max last (max_last): an index that wraps never reaches it.
      .test_shapes = reduce_sizes(false),
      .random_shapes = random_sizes(),
      .input_sets = {{"max_first", {{"x", max_input(MaxAt::First)}}, wb::shapes::sizes("n", int64_t{1} << 24)},
                     {"max_last",
                      {{"x", max_input(MaxAt::Last)}},
                      wb::shapes::plus_large(wb::shapes::sizes("n", int64_t{1} << 24), len(kLargestInt))},
                     {"all_neg_inf", {{"x", masked_input(false)}}, {len(1), len(1000), len(1 << 20)}},
                     {"one_finite_among_neg_inf", {{"x", masked_input(true)}}, {len(1), len(1000), len(1 << 20)}}},
      .race_shapes = reduce_race_shapes(),
      .bench_shapes = {len(int64_t{1} << 26)},
      .bytes = [](const wb::Shape& s) { return 4.0 * s["n"]; },
      .flops = [](const wb::Shape& s) { return 1.0 * s["n"]; },
      .peak = wb::Peak::FP32,
      .launch = launch_reduce<ReduceFn, float>,
      // Exact in any order, so a correct max writes the same bits every run: a third run that
      // differs is a race.
      .checks = {.deterministic = 1},
  };
}

wb::Shape matrix(int64_t rows, int64_t cols) { return wb::Shape{{"rows", rows}, {"cols", cols}}; }

// Row shapes: one long row, many tiny rows, rows whose starts are not 16-byte aligned, each
// side of the 64- and 4096-column switches of the solution, empty rows (3 x 0).
std::vector<wb::Shape> row_shapes() {
  const auto s = wb::shapes::table({"rows", "cols"}, {{1, 1},
                                                      {1, 3},
                                                      {2, 3},
                                                      {7, 1},
                                                      {3, 0},
                                                      {33, 65},
                                                      {1, 1000},
                                                      {1, 1000000},
                                                      {100000, 7},
                                                      {65537, 32},
                                                      {1000, 64},
                                                      {1000, 65},
                                                      {4097, 1025},
                                                      {33, 4095},
                                                      {5, 4096},
                                                      {3, 5003},
                                                      {257, 4100},
                                                      {2, 100003},
                                                      {1500, 8191},
                                                      // vector tails: row lengths 1, 2 and 3 past a multiple of 4 (and
                                                      // of 8), on several rows
                                                      {1001, 1025},
                                                      {1000, 1026},
                                                      {999, 1027},
                                                      {37, 4098}});
  // More than 2^31 elements, the last ~2^22 past 2^31 (the last row starts at 2,151,675,900):
  // 8.6 GB. 4,100 columns: the solutions' long-row path, 16-byte aligned rows.
  return wb::shapes::plus_large(s, matrix(524800, 4100));
}

// Four random shapes up to 3000 x 3000, a few long rows, and many short ones.
std::vector<wb::Shape> random_row_shapes(wb::Rng& rng) {
  std::vector<wb::Shape> out;
  for (const auto& e : wb::random_shapes_2d(rng, 4, 3000, 3000)) out.push_back(matrix(e.rows, e.cols).tag("random"));
  out.push_back(matrix(rng.range(1, 8), rng.range(4096, 1 << 20)).tag("random"));
  out.push_back(matrix(rng.range(1 << 14, 1 << 18), rng.range(1, 40)).tag("random"));
  return out;
}

wb::OpSpec<RowSumFn> row_sum() {
  return {
      .name = "row_sum",
      .dtype = "f32",
      .title = "out[r] = x[r][0] + ... + x[r][cols-1]",
      .docs = kDocs,
      .tensors = {wb::input("x", {"rows", "cols"}, DType::F32, sum_input("cols")),
                  wb::output("out", {"rows"}, DType::F32, wb::tol::sum_of({"cols"}))},
      .reference =
          [](const wb::RefCtx& r, int64_t row) {
            const auto& x = r.in("x");
            const int64_t cols = r["cols"];
            double s = 0;
            for (int64_t c = 0; c < cols; ++c) s += x.get(row * cols + c);
            r.expect("out", row, s);
          },
      .ref_rows = [](const wb::Shape& s) { return s["rows"]; },
      .test_shapes = row_shapes(),
      .random_shapes = random_row_shapes,
      // Enough rows that every block of a resident grid sums two rows or more: a block per row
      // (at most 148 x 32 resident blocks) or a warp per row (148 x 64 warps).
      .race_shapes = {matrix(20011, 300), matrix(9473, 4100)},
      // Square; --full adds one long row and a million short rows.
      .bench_shapes = {matrix(8192, 8192)},
      .full_bench_shapes = {matrix(1, int64_t{1} << 26), matrix(int64_t{1} << 20, 32)},
      .bytes = [](const wb::Shape& s) { return 4.0 * s["rows"] * s["cols"] + 4.0 * s["rows"]; },
      .flops = [](const wb::Shape& s) { return 1.0 * s["rows"] * s["cols"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](RowSumFn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<float>("x"), a.i("rows"), a.i("cols"), a.out<float>("out"), a.workspace(), a.workspace_bytes(), st);
          },
      // As the full sums: partials of a split row may meet through atomicAdd.
      .checks = {.deterministic = 0},
  };
}

}  // namespace

WB_OPS(ch03) {
  // The FP32 sum first: its 2^27 row is the chapter's headline.
  wb::add_op(sum<ReduceFn, float>("f32", DType::F32, {len(int64_t{1} << 27)}, {len(int64_t{1} << 26)}));
  wb::add_op(maximum());
  wb::add_op(sum<ReduceBf16Fn, __nv_bfloat16>("bf16", DType::BF16, {len(int64_t{1} << 27)}, {}));
  wb::add_op(row_sum());
}

}  // namespace ch03
