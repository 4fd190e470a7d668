// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch10 {

WB_VARIANTS(ch10_solution, wb::Role::Solution) {
  using namespace solution;
  return {
      wb::variant("conv2d/f32", "v1_direct", &v1_direct).is_slow(),
      wb::variant("conv2d/f32", "v2_smem_direct", &v2_smem_direct),
      wb::variant("conv2d_bn_relu/bf16", "v3_implicit_gemm_wmma", &v3_implicit_gemm_wmma).needs_cc(80),
      wb::variant("conv2d_bn_relu/bf16", "v4_implicit_gemm_mma", &v4_implicit_gemm_mma).needs_cc(80),
      wb::variant("depthwise3x3/bf16", "v5_depthwise", &v5_depthwise),
      wb::variant("conv2d_bn_relu/bf16", "v6_implicit_gemm_pipelined", &v6_implicit_gemm_pipelined).needs_cc(80),
      wb::variant("depthwise3x3/bf16", "v7_depthwise_strip", &v7_depthwise_strip),
#ifdef WB_CH10_HOPPER
      wb::variant("conv2d_bn_relu/bf16", "v8_implicit_gemm_wgmma", &v8_implicit_gemm_wgmma)
          .hopper_only()
          .with_note("wgmma + TMA filters + cp.async im2col in the 128 B swizzle, producer and consumer "
                     "warpgroups; v6 when C % 8 != 0"),
#endif
  };
}

}  // namespace ch10
