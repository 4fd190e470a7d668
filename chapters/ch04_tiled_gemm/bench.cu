// Chapter 4 benchmark: the learner's SGEMMs, the solution ladder and cuBLAS (TF32 off) side
// by side, per shape. Each kernel is checked before it is timed; the inputs change before
// every timed launch and the last timed output is checked again (prepare_timed_sgemm).
//
//   build/ch04-solution/bin/ch04_bench [--quick] [--shape=MxNxK] [--impl=...] [--json=FILE]
//   (--help lists every option, including Google Benchmark's --benchmark_* flags)
//
// The operation is C = 1 * A * B + 0.5 * C (C is read and written), FP32, packed rows.
// Bytes per call = 4 * (M*K + K*N + 2*M*N), FLOPs = 2*M*N*K; roofline % uses the FP32 peak.
// The "x ref" column is cuBLAS time / this time: 0.90 means 90% of cuBLAS.
// v1 and v2 run only on the shapes up to 2048^3 (at 4096^3 they take a second per call).
#include <cstdio>
#include <sstream>

#include "ch04.cuh"
#include "check.cuh"
#include "cuda/bench.cuh"
#include "host/shapes.h"

namespace {

using wb::bench::Role;

struct Impl {
  ch04::Kernels k;
  Role role;
};

// Slow steps of the ladder run only on shapes up to this many multiply-adds.
constexpr double kSlowLimit = 2048.0 * 2048.0 * 2048.0;
bool is_slow(const std::string& name) { return name == "v1_naive" || name == "v2_coalesced"; }

std::vector<wb::Extent3> parse_shape(const std::string& text) {
  std::vector<int64_t> d;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, 'x')) d.push_back(wb::parse_int("--shape", part, 1, 1 << 16));
  if (d.size() == 1) return {{d[0], d[0], d[0]}};
  if (d.size() == 3) return {{d[0], d[1], d[2]}};
  throw wb::UsageError("--shape: '" + text + "' is neither N (a cube) nor MxNxK");
}

}  // namespace

int main(int argc, char** argv) {
  wb::bench::Suite suite("ch04", std::string("tiled SGEMM, C = A*B + 0.5*C, FP32; reference: ") +
                                     ch04::kReferenceMathMode);
  std::string shape_text;
  suite.args().add_string("shape", "one shape instead of the default list: N (a cube) or MxNxK", &shape_text);

  return suite.run(argc, argv, [&] {
    std::vector<Impl> impls;
    for (auto& k : ch04::reference_variants()) impls.push_back({k, Role::Reference});
    for (auto& k : ch04::solution_variants()) impls.push_back({k, Role::Solution});
    for (auto& k : ch04::student_variants()) impls.push_back({k, Role::Student});
    const uint64_t seed = wb::run_seed();
    // Which tile configuration the best version runs on this GPU, and where it came from.
    std::printf("ch04: %s\n", ch04::best_config_note().c_str());

    std::vector<wb::Extent3> shapes =
        suite.quick() ? std::vector<wb::Extent3>{{1024, 1024, 1024}, {4096, 4096, 4096}}
                      : std::vector<wb::Extent3>{{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
                                                 {4096, 1024, 8192}};
    if (!shape_text.empty()) shapes = parse_shape(shape_text);
    for (const auto& e : shapes) {
      const int m = int(e.m), n = int(e.n), k = int(e.k);
      const double work = double(m) * n * k;
      for (const auto& [kern, role] : impls) {
        if (kern.sgemm == nullptr) continue;
        if (is_slow(kern.name) && (work > kSlowLimit || (suite.quick() && work > 1024.0 * 1024 * 1024))) continue;
        auto fn = kern.sgemm;
        suite.add({"sgemm", std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k), kern.name, role,
                   ch04::sgemm_bytes(m, n, k), ch04::sgemm_flops(m, n, k), wb::Peak::FP32,
                   [=] {
                     wb::Rng rng(seed);
                     return ch04::check_sgemm(fn, ch04::GemmArgs{m, n, k, 0, ch04::kBenchAlpha, ch04::kBenchBeta},
                                              rng);
                   },
                   [=] { return ch04::prepare_sgemm(fn, m, n, k, seed); },
                   [=] { return ch04::prepare_timed_sgemm(fn, m, n, k, seed); }});
      }
    }
  });
}
