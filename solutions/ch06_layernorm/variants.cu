// The ladder as the harness sees it, in the order a learner meets it.
#include <utility>

#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch06 {

WB_VARIANTS(ch06_solution, wb::Role::Solution) {
  using namespace solution;
  // Each step's forms (nullptr: the step leaves that form out), listed in the order
  // layernorm/f32, residual_layernorm/bf16, residual_rmsnorm/bf16.
  const struct {
    const char* step;
    LayerNormF32Fn* f32;
    ResidualLayerNormFn* ln;
    ResidualRmsNormFn* rms;
    bool slow;
  } steps[] = {
      {"v1_thread_per_row", nullptr, &v1_residual_layernorm, &v1_residual_rmsnorm, true},
      {"v2_block_smem_reduce", &v2_layernorm_f32, &v2_residual_layernorm, &v2_residual_rmsnorm, false},
      {"v3_warp_shuffle", nullptr, &v3_residual_layernorm, &v3_residual_rmsnorm, false},
      {"v4_row_in_registers", &v4_layernorm_f32, &v4_residual_layernorm, &v4_residual_rmsnorm, false},
      {"v5_welford", nullptr, &v5_residual_layernorm, nullptr, false},
      {"v6_persistent", &v6_layernorm_f32, &v6_residual_layernorm, &v6_residual_rmsnorm, false},
  };
  wb::VariantList v;
  for (const auto& s : steps) {
    const auto add = [&](const char* op, auto* fn) {
      if (fn == nullptr) return;
      wb::Variant variant = wb::variant(op, s.step, fn);
      if (s.slow) variant.is_slow();
      v.push_back(std::move(variant));
    };
    add("layernorm/f32", s.f32);
    add("residual_layernorm/bf16", s.ln);
    add("residual_rmsnorm/bf16", s.rms);
  }
  return v;
}

}  // namespace ch06
