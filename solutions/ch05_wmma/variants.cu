// The ladder as the harness sees it, in the order a learner meets it.
#include <algorithm>

#include "ladder.cuh"
#include "declare/op.cuh"

#ifdef WB_CH05_HOPPER
#include "hopper/hopper.cuh"
#endif

namespace ch05 {
namespace {

// One step at every type pair it has (a null INT8 launcher: no INT8 version). `min_cc` is
// the step's own need (cp.async: 80); each type pair adds its own (BF16: 80).
void add_step(wb::VariantList& out, const char* name, int min_cc, GemmF16F32* f16_f32, GemmF16F16* f16_f16,
              GemmBF16F32* bf16_f32, GemmBF16BF16* bf16_bf16, GemmI8I32* i8_i32) {
  const auto cc = [&](Types t) { return std::max(min_cc, types_min_cc(t)); };
  out.push_back(wb::variant("gemm/f16_f32", name, f16_f32).needs_cc(cc(Types::F16_F32)));
  out.push_back(wb::variant("gemm/f16_f16", name, f16_f16).needs_cc(cc(Types::F16_F16)));
  out.push_back(wb::variant("gemm/bf16_f32", name, bf16_f32).needs_cc(cc(Types::BF16_F32)));
  out.push_back(wb::variant("gemm/bf16_bf16", name, bf16_bf16).needs_cc(cc(Types::BF16_BF16)));
  if (i8_i32) out.push_back(wb::variant("gemm/i8_i32", name, i8_i32).needs_cc(cc(Types::I8_I32)));
}

// The four FP16/BF16 type pairs of one launcher template, in add_step's order.
#define CH05_FLOAT_TYPES(fn)                                                                        \
  &solution::fn<__half, float>, &solution::fn<__half, __half>, &solution::fn<__nv_bfloat16, float>, \
      &solution::fn<__nv_bfloat16, __nv_bfloat16>

#ifdef WB_CH05_HOPPER
// The INT8 Hopper steps' untimed prepare: B transposed once, as the cuBLASLt reference has it.
void arrange_int8_b(const wb::Args& a, cudaStream_t s) {
  solution::hopper::int8_arrange_b(a.i("N"), a.i("K"), a.in<int8_t>("B"), s);
}
#endif

}  // namespace

WB_VARIANTS(ch05_solution, wb::Role::Solution) {
  wb::VariantList v;
  add_step(v, "v1_wmma_global", 70, CH05_FLOAT_TYPES(v1_wmma_global), &solution::v1_wmma_global<int8_t, int32_t>);
  add_step(v, "v2_wmma_smem", 70, CH05_FLOAT_TYPES(v2_wmma_smem), &solution::v2_wmma_smem<int8_t, int32_t>);
  add_step(v, "v3_wmma_warp_tiles", 70, CH05_FLOAT_TYPES(v3_wmma_warp_tiles),
           &solution::v3_wmma_warp_tiles<int8_t, int32_t>);
  add_step(v, "v4_cp_async_pipeline", 80, CH05_FLOAT_TYPES(v4_cp_async_pipeline),
           &solution::v4_cp_async_pipeline<int8_t, int32_t>);
  add_step(v, "v5_mma_sync", 80, CH05_FLOAT_TYPES(v5_mma_sync), nullptr);
  add_step(v, "v7_mma_sync_k64", 80, CH05_FLOAT_TYPES(v7_mma_sync_k64), nullptr);
  v.push_back(wb::variant("gemm/i8_i32", "v8_mma_sync_int8", &solution::v8_mma_sync_int8<int8_t, int32_t>)
                  .needs_cc(std::max(80, types_min_cc(Types::I8_I32))));
  // The first two steps are far off the roof: left out of the default benchmark (--full has them).
  for (auto& x : v) {
    if (x.name == "v1_wmma_global" || x.name == "v2_wmma_smem") x.is_slow();
  }
  // FP8 (exercise 4's solution), any GPU from sm_80; left out of the default benchmark at 8192^3.
  v.push_back(wb::variant("fp8_quantize/bf16_e4m3", "f1_fp8_cuda_cores", &solution::f1_fp8_quantize).needs_cc(80));
  v.push_back(wb::variant("gemm_fp8/e4m3_bf16", "f1_fp8_cuda_cores", &solution::f1_fp8_gemm).needs_cc(80).is_slow());
  v.push_back(wb::variant("gemm_fp8_block/e4m3_bf16", "f1_fp8_cuda_cores", &solution::f1_fp8_gemm_block)
                  .needs_cc(80)
                  .is_slow());
#ifdef WB_CH05_HOPPER
  const size_t first = v.size();
  add_step(v, "v6_wgmma_tma", 90, CH05_FLOAT_TYPES(v6_wgmma_tma), nullptr);
  for (size_t i = first; i < v.size(); ++i) {
    v[i].hopper_only().with_note("TMA + wgmma when K and N are multiples of 8, otherwise v5_mma_sync");
  }
  // The FP8 wgmma steps: per-tensor scales (gemm_fp8) or block scales (gemm_fp8_block).
  const auto fp8 = [&](bool block, const char* name, Fp8GemmFn* fn, const char* note) {
    v.push_back(
        wb::variant(block ? "gemm_fp8_block/e4m3_bf16" : "gemm_fp8/e4m3_bf16", name, fn).hopper_only().with_note(note));
  };
  fp8(false, "v9_wgmma_fp8", &solution::v9_wgmma_fp8,
      "TMA + wgmma e4m3, 128 x 128 tiles, FP32 promotion every 128 of K");
  fp8(true, "v10_wgmma_fp8_block", &solution::v10_wgmma_fp8_block,
      "v9 with the block scales applied at each promotion");
  fp8(false, "v12_wgmma_fp8_overlap", &solution::v12_wgmma_fp8_overlap,
      "v9 with two partial-sum sets: each promotion overlaps the next stage's wgmmas");
  fp8(true, "v13_wgmma_fp8_block_overlap", &solution::v13_wgmma_fp8_block_overlap,
      "v10 on v12's schedule: block-scaled promotion overlapping the next stage's wgmmas");
  fp8(false, "v16_wgmma_fp8_wide", &solution::v16_wgmma_fp8_wide,
      "128 x 192 tiles (m64n192k32), TMA-store epilogue, CTA pairs multicasting B; D not 16-byte aligned: v12");
  fp8(true, "v17_wgmma_fp8_block_wide", &solution::v17_wgmma_fp8_block_wide,
      "v16's kernel with block-scaled promotion; D not 16-byte aligned: v13");
  v.push_back(wb::variant("gemm/i8_i32", "v11_wgmma_int8", &solution::v11_wgmma_int8<int8_t, int32_t>)
                  .hopper_only()
                  .with_prepare(arrange_int8_b)
                  .with_note("TMA + wgmma s8 when K is a multiple of 16 (B transposed once, untimed, as the "
                             "cuBLASLt reference does), otherwise v8_mma_sync_int8"));
  const size_t v14_first = v.size();
  add_step(v, "v14_mma_sync_tma", 90, CH05_FLOAT_TYPES(v14_mma_sync_tma), nullptr);
  for (size_t i = v14_first; i < v.size(); ++i) {
    v[i].hopper_only().with_note(
        "v7's mma.sync tiles fed by TMA, mbarrier-released stages, persistent, when K and N are multiples of 8, "
        "otherwise v7_mma_sync_k64");
  }
  v.push_back(wb::variant("gemm/i8_i32", "v15_mma_sync_tma_int8", &solution::v15_mma_sync_tma_int8<int8_t, int32_t>)
                  .hopper_only()
                  .with_prepare(arrange_int8_b)
                  .with_note("v8's mma.sync tiles on v14's pipeline, B transposed once (untimed, as for v11) when K "
                             "is a multiple of 16, otherwise v8_mma_sync_int8"));
#endif
  return v;
}

}  // namespace ch05
