// Chapter 2 benchmark: the learner's kernels, the solution ladder and cuBLAS side by side,
// per shape. Each kernel is checked before it is timed; the inputs change before every
// timed launch and the last timed output is checked again (prepare_timed_* in check.cu).
//
//   build/ch02-solution/bin/ch02_bench [--quick] [--op=transpose_f32] [--impl=...] [--json=FILE]
//   (--help lists every option, including Google Benchmark's --benchmark_* flags)
//
// GB/s counts the bytes an op must move: for a transpose 2 * rows * cols * sizeof(T) (read
// once, written once); for the strided copy 8 * n, the floats used — the wasted parts of
// the sectors a stride drags in are not counted, which is the point of that experiment.
// `%meas` is the share of this GPU's measured copy bandwidth: the chapter's target is
// >= 90 for the best transpose at 8192x8192 FP32.
#include <algorithm>
#include <sstream>

#include "ch02.cuh"
#include "check.cuh"
#include "cuda/bench.cuh"
#include "host/cli.h"
#include "host/shapes.h"

namespace {

using wb::bench::Role;

struct Impl {
  ch02::Kernels k;
  Role role;
};

const std::vector<std::string> kOps = {"strided_copy", "transpose_f32", "transpose_bf16"};

// The ops named by --op (all when empty); a name that is not an op is a usage error.
std::vector<std::string> selected_ops(const std::string& filter) {
  if (filter.empty()) return kOps;
  std::vector<std::string> out;
  std::stringstream items(filter);
  for (std::string item; std::getline(items, item, ',');) {
    if (std::find(kOps.begin(), kOps.end(), item) == kOps.end()) {
      throw wb::UsageError("--op: '" + item + "' is not an op of this chapter; use strided_copy, transpose_f32 or " +
                           "transpose_bf16 (comma-separated)");
    }
    out.push_back(item);
  }
  return out;
}

std::string shape_text(const wb::Extent2& e) { return std::to_string(e.rows) + "x" + std::to_string(e.cols); }

}  // namespace

int main(int argc, char** argv) {
  wb::bench::Suite suite("ch02", "coalescing: strided copy, matrix transpose (FP32, BF16)");
  std::string op_filter;
  suite.args().add_string("op", "only these ops, comma-separated: strided_copy, transpose_f32, transpose_bf16",
                          &op_filter);

  return suite.run(argc, argv, [&] {
    const auto ops = selected_ops(op_filter);
    auto want = [&](const char* op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); };
    std::vector<Impl> impls;
    for (auto& k : ch02::reference_variants()) impls.push_back({k, Role::Reference});
    for (auto& k : ch02::solution_variants()) impls.push_back({k, Role::Solution});
    for (auto& k : ch02::student_variants()) impls.push_back({k, Role::Student});
    const uint64_t seed = wb::run_seed();

    // Strided copy: the same 2^24 useful floats at growing strides (the input grows with the
    // stride: 1 GiB at stride 16), then the 8192 x 8192 matrix as one plain copy, the
    // yardstick for the transposes below (same bytes).
    if (want("strided_copy")) {
      std::vector<std::pair<int, int>> runs;  // (n, stride)
      for (int stride : suite.quick() ? std::vector<int>{1, 8} : std::vector<int>{1, 2, 4, 8, 16}) {
        runs.emplace_back(1 << 24, stride);
      }
      if (!suite.quick()) runs.emplace_back(1 << 26, 1);
      for (const auto& [n, stride] : runs) {
        for (const auto& [k, role] : impls) {
          if (k.strided_copy == nullptr) continue;
          auto fn = k.strided_copy;
          suite.add({"strided_copy", "n=" + std::to_string(n) + " stride=" + std::to_string(stride), k.name, role,
                     8.0 * n, 0.0, wb::Peak::FP32,
                     [=] {
                       wb::Rng rng(seed);
                       return ch02::check_strided_copy(fn, n, stride, rng);
                     },
                     [=] { return ch02::prepare_strided_copy(fn, n, stride, seed); },
                     [=] { return ch02::prepare_timed_strided_copy(fn, n, stride, seed); }});
        }
      }
    }

    const std::vector<wb::Extent2> f32_shapes =
        suite.quick() ? std::vector<wb::Extent2>{{8192, 8192}}
                      : std::vector<wb::Extent2>{{8192, 8192}, {4096, 16384}, {16385, 1023}};
    if (want("transpose_f32")) {
      for (const auto& e : f32_shapes) {
        const int rows = static_cast<int>(e.rows), cols = static_cast<int>(e.cols);
        for (const auto& [k, role] : impls) {
          if (k.transpose_f32 == nullptr) continue;
          auto fn = k.transpose_f32;
          suite.add({"transpose_f32", shape_text(e), k.name, role, 2.0 * 4 * e.rows * e.cols, 0.0, wb::Peak::FP32,
                     [=] {
                       wb::Rng rng(seed);
                       return ch02::check_transpose_f32(fn, rows, cols, rng);
                     },
                     [=] { return ch02::prepare_transpose_f32(fn, rows, cols, seed); },
                     [=] { return ch02::prepare_timed_transpose_f32(fn, rows, cols, seed); }});
        }
      }
    }

    const std::vector<wb::Extent2> bf16_shapes = suite.quick()
                                                     ? std::vector<wb::Extent2>{{8192, 8192}}
                                                     : std::vector<wb::Extent2>{{8192, 8192}, {16385, 1023}};
    if (want("transpose_bf16")) {
      for (const auto& e : bf16_shapes) {
        const int rows = static_cast<int>(e.rows), cols = static_cast<int>(e.cols);
        for (const auto& [k, role] : impls) {
          if (k.transpose_bf16 == nullptr) continue;
          auto fn = k.transpose_bf16;
          suite.add({"transpose_bf16", shape_text(e), k.name, role, 2.0 * 2 * e.rows * e.cols, 0.0,
                     wb::Peak::BF16Tensor,
                     [=] {
                       wb::Rng rng(seed);
                       return ch02::check_transpose_bf16(fn, rows, cols, rng);
                     },
                     [=] { return ch02::prepare_transpose_bf16(fn, rows, cols, seed); },
                     [=] { return ch02::prepare_timed_transpose_bf16(fn, rows, cols, seed); }});
        }
      }
    }
  });
}
