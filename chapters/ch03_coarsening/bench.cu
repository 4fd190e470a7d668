// Chapter 3 benchmark: the learner's reductions, the solution ladder (with v4 at three
// coarsening factors) and CUB side by side, per shape. Each kernel is checked before it is
// timed; the inputs change before every timed launch and the last timed result is checked
// again (prepare_timed_* in check.cu). Bytes are the minimum traffic: the input read once
// (4 bytes per FP32 element, 2 per BF16), plus the results written (one float per row for
// row sums; 4 bytes in all for a full reduction, left out).
//
//   build/ch03/bin/ch03_bench [--quick] [--n=N] [--impl=...] [--json=FILE]
//   (--help lists every option, including Google Benchmark's --benchmark_* flags)
#include "ch03.cuh"
#include "check.cuh"
#include "cuda/bench.cuh"
#include "host/shapes.h"

namespace {

using wb::bench::Role;

struct Impl {
  ch03::Kernels k;
  Role role;
};

}  // namespace

int main(int argc, char** argv) {
  wb::bench::Suite suite("ch03", "thread coarsening: sum and max reductions, row sums (FP32 accumulate)");
  int64_t n_override = 0;
  suite.args().add_int("n", "length of the full reductions (default: 2^26 and 2^27 for sums, 2^26 for max)",
                       &n_override);

  return suite.run(argc, argv, [&] {
    using ch03::Reduction;
    std::vector<Impl> impls;
    for (auto& k : ch03::reference_variants()) impls.push_back({k, Role::Reference});
    for (auto& k : ch03::solution_variants()) impls.push_back({k, Role::Solution});
    for (auto& k : ch03::student_variants()) impls.push_back({k, Role::Student});
    const uint64_t seed = wb::run_seed();

    // Full reductions: 2^26 FP32 is 256 MB, 2^27 is 512 MB; 2^27 BF16 is 256 MB.
    struct Full {
      Reduction op;
      int64_t n;
    };
    std::vector<Full> full = suite.quick()
                                 ? std::vector<Full>{{Reduction::SumF32, 1 << 26}, {Reduction::SumBf16, 1 << 27}}
                                 : std::vector<Full>{{Reduction::SumF32, 1 << 26},
                                                     {Reduction::SumF32, 1 << 27},
                                                     {Reduction::MaxF32, 1 << 26},
                                                     {Reduction::SumBf16, 1 << 27}};
    if (n_override > 0) {
      for (auto& f : full) f.n = n_override;
    }
    for (const auto& [op, n64] : full) {
      const int n = static_cast<int>(n64);
      const double elem_bytes = op == Reduction::SumBf16 ? 2.0 : 4.0;
      for (const auto& [k, role] : impls) {
        if (!ch03::has(k, op)) continue;
        suite.add({ch03::reduction_name(op), "n=" + std::to_string(n), k.name, role, elem_bytes * n, 1.0 * n,
                   wb::Peak::FP32,
                   [=] {
                     wb::Rng rng(seed);
                     return ch03::check_reduce(k, op, n, rng);
                   },
                   [=] { return ch03::prepare_reduce(k, op, n, seed); },
                   [=] { return ch03::prepare_timed_reduce(k, op, n, seed); }});
      }
    }

    // Row sums: square, one long row, a million short rows.
    const std::vector<wb::Extent2> shapes = suite.quick()
                                                ? std::vector<wb::Extent2>{{8192, 8192}}
                                                : std::vector<wb::Extent2>{{8192, 8192}, {1, 1 << 26}, {1 << 20, 32}};
    for (const auto& e : shapes) {
      const int rows = static_cast<int>(e.rows), cols = static_cast<int>(e.cols);
      const double elems = 1.0 * rows * cols;
      for (const auto& [k, role] : impls) {
        if (k.row_sum == nullptr) continue;
        suite.add({"row_sum", std::to_string(rows) + "x" + std::to_string(cols), k.name, role, 4.0 * elems + 4.0 * rows,
                   elems, wb::Peak::FP32,
                   [=] {
                     wb::Rng rng(seed);
                     return ch03::check_row_sum(k, rows, cols, rng);
                   },
                   [=] { return ch03::prepare_row_sum(k, rows, cols, seed); },
                   [=] { return ch03::prepare_timed_row_sum(k, rows, cols, seed); }});
      }
    }
  });
}
