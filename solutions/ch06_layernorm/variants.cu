// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch06 {

WB_VARIANTS(ch06_solution, wb::Role::Solution) {
  using namespace solution;
  const char* ln = "residual_layernorm/bf16";
  const char* rms = "residual_rmsnorm/bf16";
  const char* f32 = "layernorm/f32";
  return {
      wb::variant(ln, "v1_thread_per_row", &v1_residual_layernorm).is_slow(),
      wb::variant(rms, "v1_thread_per_row", &v1_residual_rmsnorm).is_slow(),
      wb::variant(f32, "v2_block_smem_reduce", &v2_layernorm_f32),
      wb::variant(ln, "v2_block_smem_reduce", &v2_residual_layernorm),
      wb::variant(rms, "v2_block_smem_reduce", &v2_residual_rmsnorm),
      wb::variant(ln, "v3_warp_shuffle", &v3_residual_layernorm),
      wb::variant(rms, "v3_warp_shuffle", &v3_residual_rmsnorm),
      wb::variant(f32, "v4_row_in_registers", &v4_layernorm_f32),
      wb::variant(ln, "v4_row_in_registers", &v4_residual_layernorm),
      wb::variant(rms, "v4_row_in_registers", &v4_residual_rmsnorm),
      wb::variant(ln, "v5_welford", &v5_residual_layernorm),
      wb::variant(f32, "v6_persistent", &v6_layernorm_f32),
      wb::variant(ln, "v6_persistent", &v6_residual_layernorm),
      wb::variant(rms, "v6_persistent", &v6_residual_rmsnorm),
  };
}

}  // namespace ch06
