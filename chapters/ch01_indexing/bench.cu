// Chapter 1 benchmark: the learner's kernels, the solution ladder and cuBLAS geam side by
// side, per shape. Each kernel is checked before it is timed; the inputs change before every
// timed launch and the last timed output is checked again (prepare_timed_* in check.cu).
//
//   build/ch01/bin/ch01_bench [--quick] [--n=N] [--impl=...] [--json=FILE]
//   (--help lists every option, including Google Benchmark's --benchmark_* flags)
#include "ch01.cuh"
#include "check.cuh"
#include "cuda/bench.cuh"
#include "host/shapes.h"

namespace {

using wb::bench::Role;

struct Impl {
  ch01::Kernels k;
  Role role;
};

}  // namespace

int main(int argc, char** argv) {
  wb::bench::Suite suite("ch01", "thread indexing: vector add, RGB to grey, matrix add (FP32)");
  int64_t n_override = 0;
  suite.args().add_int("n", "vector length for vector add (default: 2^24, 2^26 and 2^28)", &n_override);

  return suite.run(argc, argv, [&] {
    std::vector<Impl> impls;
    for (auto& k : ch01::reference_variants()) impls.push_back({k, Role::Reference});
    for (auto& k : ch01::solution_variants()) impls.push_back({k, Role::Solution});
    for (auto& k : ch01::student_variants()) impls.push_back({k, Role::Student});
    const uint64_t seed = wb::run_seed();

    std::vector<int64_t> sizes = suite.quick() ? std::vector<int64_t>{1 << 24}
                                               : std::vector<int64_t>{1 << 24, 1 << 26, 1 << 28};
    if (n_override > 0) sizes = {n_override};
    for (int64_t n64 : sizes) {
      const int n = static_cast<int>(n64);
      for (const auto& [k, role] : impls) {
        for (auto [fn, suffix] : {std::pair{k.vector_add, ""}, std::pair{k.vector_add_x2, "/x2"}}) {
          if (fn == nullptr) continue;
          const std::string checked_as = *suffix ? "vector_add_x2" : "vector_add";
          suite.add({"vector_add", "n=" + std::to_string(n), k.name + suffix, role, 12.0 * n, 1.0 * n, wb::Peak::FP32,
                     [=] {
                       wb::Rng rng(seed);
                       return ch01::check_vector_add(fn, n, rng);
                     },
                     [=] { return ch01::prepare_vector_add(fn, n, seed); },
                     [=] { return ch01::prepare_timed_vector_add(fn, n, seed, checked_as); }});
        }
      }
    }

    const std::vector<wb::Extent2> images = suite.quick() ? std::vector<wb::Extent2>{{2160, 3840}}
                                                          : std::vector<wb::Extent2>{{2160, 3840}, {4321, 7681}};
    for (const auto& e : images) {
      const int h = static_cast<int>(e.rows), w = static_cast<int>(e.cols);
      for (const auto& [k, role] : impls) {
        if (k.rgb_to_grey == nullptr) continue;
        auto fn = k.rgb_to_grey;
        suite.add({"rgb_to_grey", std::to_string(h) + "x" + std::to_string(w), k.name, role, 16.0 * h * w,
                   5.0 * h * w, wb::Peak::FP32,
                   [=] {
                     wb::Rng rng(seed);
                     return ch01::check_rgb_to_grey(fn, h, w, w, rng);
                   },
                   [=] { return ch01::prepare_rgb_to_grey(fn, h, w, seed); },
                   [=] { return ch01::prepare_timed_rgb_to_grey(fn, h, w, seed); }});
      }
    }

    const std::vector<wb::Extent2> matrices = suite.quick() ? std::vector<wb::Extent2>{{4096, 4096}}
                                                            : std::vector<wb::Extent2>{{4096, 4096}, {2047, 16385}, {16385, 2047}};
    for (const auto& e : matrices) {
      const int rows = static_cast<int>(e.rows), cols = static_cast<int>(e.cols);
      for (const auto& [k, role] : impls) {
        if (k.matrix_add == nullptr) continue;
        auto fn = k.matrix_add;
        suite.add({"matrix_add", std::to_string(rows) + "x" + std::to_string(cols), k.name, role,
                   12.0 * rows * cols, 1.0 * rows * cols, wb::Peak::FP32,
                   [=] {
                     wb::Rng rng(seed);
                     return ch01::check_matrix_add(fn, rows, cols, 0, rng);
                   },
                   [=] { return ch01::prepare_matrix_add(fn, rows, cols, seed); },
                   [=] { return ch01::prepare_timed_matrix_add(fn, rows, cols, seed); }});
      }
    }
  });
}
