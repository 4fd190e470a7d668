// The solution ladder as the harness sees it (ladder.cuh says what each step changes).
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch09::solution {

WB_VARIANTS(ch09_solution, wb::Role::Solution) {
  std::vector<wb::Variant> v;
  for (const char* op : {"linear_bias/bf16", "linear_bias_gelu/bf16"}) {
    v.push_back(wb::variant(op, "v1_naive", &linear_naive<bf16>).is_slow());
    v.push_back(wb::variant(op, "v2_smem_tiled", &linear_tiled<bf16>));
    v.push_back(wb::variant(op, "v3_wmma_epilogue", &linear_wmma).needs_cc(80));
    v.push_back(wb::variant(op, "v7_skinny_gemm", &linear_skinny<bf16>));
    v.push_back(wb::variant(op, "v8_mma_epilogue", &linear_mma).needs_cc(80));
#ifdef WB_CH09_HOPPER
    v.push_back(wb::variant(op, "v12_wgmma_epilogue", &linear_wgmma_tma)
                    .hopper_only()
                    .with_note("TMA + wgmma, tile per shape, bias/GELU on the registers; K % 8 != 0: v8_mma_epilogue"));
    v.push_back(wb::variant(op, "v13_wgmma_bias_ahead", &linear_wgmma_bias_ahead)
                    .hopper_only()
                    .with_note("v12 with each thread's bias loaded before the K loop; K % 8 != 0: v8_mma_epilogue"));
#endif
  }
  for (const char* op : {"linear_bias/f32", "linear_bias_gelu/f32"}) {
    v.push_back(wb::variant(op, "v1_naive", &linear_naive<float>).is_slow());
    v.push_back(wb::variant(op, "v2_smem_tiled", &linear_tiled<float>));
    v.push_back(wb::variant(op, "v7_skinny_gemm", &linear_skinny<float>));
  }
  for (const char* op : {"gemv/bf16", "gemv_bias/bf16", "gemv_bias_gelu/bf16"}) {
    v.push_back(wb::variant(op, "v1_naive", &gemv_naive<bf16>).is_slow());
    v.push_back(wb::variant(op, "v4_gemv_warp", &gemv_warp<bf16>));
  }
  for (const char* op : {"gemv/f32", "gemv_bias/f32", "gemv_bias_gelu/f32"}) {
    v.push_back(wb::variant(op, "v1_naive", &gemv_naive<float>).is_slow());
    v.push_back(wb::variant(op, "v4_gemv_warp", &gemv_warp<float>));
  }
  for (const char* op : {"gemv_w8a16/bf16", "gemv_w8a16_bias/bf16", "gemv_w8a16_bias_gelu/bf16"}) {
    v.push_back(wb::variant(op, "v5_gemv_w8a16", &gemv_w8a16));
  }
  for (const char* op : {"gemv_w4a16/bf16", "gemv_w4a16_bias/bf16", "gemv_w4a16_bias_gelu/bf16"}) {
    v.push_back(wb::variant(op, "v10_gemv_w4a16", &gemv_w4a16));
    v.push_back(wb::variant(op, "v14_w4a16_loads_ahead", &gemv_w4a16_ahead));
    v.push_back(wb::variant(op, "v15_w4a16_slab_mma", &gemv_w4a16_slab).needs_cc(80));
  }
  const auto argmax_ws = [](const wb::Shape&) { return gemv_argmax_workspace_bytes(); };
  v.push_back(wb::variant("ln_gemv/bf16", "v6_fused_decode", &ln_gemv<bf16>));
  v.push_back(wb::variant("ln_gemv/f32", "v6_fused_decode", &ln_gemv<float>));
  v.push_back(wb::variant("gemv_residual/bf16", "v6_fused_decode", &gemv_residual<bf16>));
  v.push_back(wb::variant("gemv_residual/f32", "v6_fused_decode", &gemv_residual<float>));
  v.push_back(wb::variant("ln_gemv/bf16", "v15_w4a16_slab_mma", &ln_gemv_slab).needs_cc(80));
  v.push_back(wb::variant("gemv_residual/bf16", "v15_w4a16_slab_mma", &gemv_residual_slab).needs_cc(80));
  v.push_back(wb::variant("gemv_argmax/bf16", "v6_fused_decode", &gemv_argmax<bf16>).with_workspace(argmax_ws));
  v.push_back(wb::variant("gemv_argmax/f32", "v6_fused_decode", &gemv_argmax<float>).with_workspace(argmax_ws));
  v.push_back(wb::variant("ln_gemv_w8a16/bf16", "v6_fused_decode", &ln_gemv_w8a16));
  v.push_back(wb::variant("gemv_residual_w8a16/bf16", "v6_fused_decode", &gemv_residual_w8a16));
  v.push_back(wb::variant("ln_gemv_w4a16/bf16", "v11_fused_decode_w4a16", &ln_gemv_w4a16));
  v.push_back(wb::variant("gemv_residual_w4a16/bf16", "v11_fused_decode_w4a16", &gemv_residual_w4a16));
  v.push_back(wb::variant("ln_gemv_w4a16/bf16", "v14_w4a16_loads_ahead", &ln_gemv_w4a16_ahead));
  v.push_back(wb::variant("gemv_residual_w4a16/bf16", "v14_w4a16_loads_ahead", &gemv_residual_w4a16_ahead));
  v.push_back(wb::variant("ln_gemv_w4a16/bf16", "v15_w4a16_slab_mma", &ln_gemv_w4a16_slab).needs_cc(80));
  v.push_back(wb::variant("gemv_residual_w4a16/bf16", "v15_w4a16_slab_mma", &gemv_residual_w4a16_slab).needs_cc(80));
  return v;
}

}  // namespace ch09::solution
