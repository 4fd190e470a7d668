// Chapter 5 benchmark: the learner's kernels, the solution ladder and cuBLAS GemmEx side by
// side, per shape. Each kernel is checked (float64 on a sample, and against cuBLAS's own
// error) before it is timed.
//
//   gemm_bf16_bf16 4096^3   every step of the ladder, the bonus, the reference, yours
//   gemm_bf16_bf16 8192^3   the fastest steps (v4, v5, v6), the reference, yours
//   gemm_f16_f16   4096^3   every step that has FP16, the reference, yours
//   gemm_i8_i32    4096^3   every step that has INT8, the reference, yours
// --quick: 4096^3 BF16 only. --size=S: S^3 for every op, every step.
// Sets the GPU cannot run (BF16 before sm_80, the wgmma bonus off sm_90) are left out.
//
//   build/ch05/bin/ch05_bench [--quick] [--size=S] [--impl=...] [--json=FILE]
//   (--help lists every option, including Google Benchmark's --benchmark_* flags)
#include <algorithm>

#include "ch05.cuh"
#include "check.cuh"
#include "cuda/bench.cuh"
#include "cuda/device.cuh"

namespace {

using wb::bench::Role;

struct Impl {
  ch05::Kernels k;
  Role role;
};

// The steps too slow to be worth timing at 8192^3.
bool slow_step(const ch05::Kernels& k) {
  return k.name == "v1_wmma_global" || k.name == "v2_wmma_smem" || k.name == "v3_wmma_warp_tiles";
}

}  // namespace

int main(int argc, char** argv) {
  wb::bench::Suite suite("ch05", "tensor-core GEMM: WMMA, mma.sync and wgmma (FP16/BF16 -> FP32 accumulate, INT8 -> INT32)");
  int64_t size_override = 0;
  suite.args().add_int("size", "one cube size S (S x S x S) for every op and every step", &size_override);

  return suite.run(argc, argv, [&] {
    const wb::DeviceInfo dev = wb::query_device();
    const int cc = dev.major * 10 + dev.minor;
    std::vector<Impl> impls;
    for (auto& k : ch05::reference_variants()) impls.push_back({k, Role::Reference});
    for (auto& k : ch05::solution_variants()) impls.push_back({k, Role::Solution});
    for (auto& k : ch05::student_variants()) impls.push_back({k, Role::Student});
    const uint64_t seed = wb::run_seed();

    struct Op {
      ch05::Types t;
      int size;
      bool fast_steps_only;
    };
    std::vector<Op> ops;
    if (size_override > 0) {
      const int s = static_cast<int>(size_override);
      for (auto t : {ch05::Types::BF16_BF16, ch05::Types::F16_F16, ch05::Types::I8_I32}) ops.push_back({t, s, false});
    } else if (suite.quick()) {
      ops = {{ch05::Types::BF16_BF16, 4096, false}};
    } else {
      ops = {{ch05::Types::BF16_BF16, 4096, false},
             {ch05::Types::BF16_BF16, 8192, true},
             {ch05::Types::F16_F16, 4096, false},
             {ch05::Types::I8_I32, 4096, false}};
    }

    for (const auto& op : ops) {
      const int s = op.size;
      const std::string shape = std::to_string(s) + "x" + std::to_string(s) + "x" + std::to_string(s);
      for (const auto& [k, role] : impls) {
        if (!ch05::has(k, op.t)) continue;
        if (op.fast_steps_only && slow_step(k)) continue;
        if (cc < std::max(k.min_cc, ch05::types_min_cc(op.t))) continue;  // this GPU lacks the instructions
        if (k.sm90a_only && cc != 90) continue;
        const ch05::Types t = op.t;
        const auto kernels = k;
        suite.add({std::string("gemm_") + ch05::types_name(t), shape, k.name, role, ch05::gemm_bytes(t, s, s, s),
                   ch05::gemm_flops(s, s, s), ch05::gemm_peak(t),
                   [=] {
                     wb::Rng rng(seed);
                     return ch05::check_gemm(kernels, t, {s, s, s}, rng);
                   },
                   [=] { return ch05::prepare_gemm(kernels, t, s, s, s, seed); }});
      }
    }
  });
}
