// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch08 {

WB_VARIANTS(ch08_solution, wb::Role::Solution) {
  using namespace solution;
  const char* probs = "attention_probs/f32";
  const char* f32 = "attention/f32";
  const char* bf16 = "attention/bf16";
  // v1 and v2 keep the probabilities of every head in a buffer of B * H * Sq * Sk floats.
  const auto scores_buffer = [](const wb::Shape& s) {
    return scratch_bytes_f32(static_cast<int>(s["B"]), static_cast<int>(s["H"]), static_cast<int>(s["Sq"]),
                             static_cast<int>(s["Sk"]));
  };
  const auto decode_scratch = [](const wb::Shape& s) {
    return decode_scratch_bytes(static_cast<int>(s["B"]), static_cast<int>(s["Hq"]), static_cast<int>(s["Hkv"]),
                                static_cast<int>(s["Lmax"]), static_cast<int>(s["D"]));
  };
  return {
      // v1 is the teaching baseline (a launch of 0.3 s at B 4): --full or --impl=v1_unfused.
      wb::variant(probs, "v1_unfused", &v1_probs_f32).is_slow().with_note("three kernels: scores, mask, softmax"),
      wb::variant(f32, "v1_unfused", &v1_attention_f32)
          .is_slow()
          .with_workspace(scores_buffer)
          .with_note("scores, mask, softmax, P V: the Sq x Sk buffer crosses DRAM five times"),
      wb::variant(probs, "v2_fused_scores_softmax", &v2_probs_f32).with_note("one kernel, p written once"),
      wb::variant(f32, "v2_fused_scores_softmax", &v2_attention_f32)
          .with_workspace(scores_buffer)
          .with_note("fused p, then P V"),
      wb::variant(f32, "v3_flash_f32", &v3_attention_f32).with_note("online softmax, no Sq x Sk buffer"),
      wb::variant(bf16, "v4_flash_mma_sync", &v4_attention_bf16)
          .needs_cc(80)
          .with_note("mma.sync m16n8k16 BF16, cp.async double buffering"),
#ifdef WB_CH08_HOPPER
      wb::variant(bf16, "v7_flash_wgmma_tma", &v7_attention_bf16)
          .hopper_only()
          .with_note("wgmma + TMA, producer and consumer warpgroups, P from registers"),
      wb::variant(bf16, "v8_flash_wgmma_pingpong", &v8_attention_bf16)
          .hopper_only()
          .with_note("v7 + ping-pong between the consumer warpgroups, softmax overlapped with the last P V"),
#endif
      wb::variant("attention_gqa/bf16", "v4_flash_mma_sync", &v4_attention_gqa_bf16)
          .needs_cc(80)
          .with_note("v4 with the G query heads of a kv head as one matrix of G * Sq rows"),
      wb::variant("attention_ragged/bf16", "v4_flash_mma_sync", &v4_attention_ragged_bf16)
          .needs_cc(80)
          .with_note("v4 on a token-major packed batch; blocks past a sequence's end return at once"),
      wb::variant("attention_decode/bf16", "v5_split_kv_decode", &v5_decode_bf16)
          .needs_cc(80)
          .with_workspace(decode_scratch)
          .with_note("keys split over CTAs, G heads per CTA on CUDA cores, merged by log-sum-exp"),
      wb::variant("attention_decode/bf16", "v6_split_kv_mma", &v6_decode_bf16)
          .needs_cc(80)
          .with_workspace(decode_scratch)
          .with_note("v5 on tensor cores, one wave of CTAs, 3-stage pipeline, merge in the last CTA (G <= 4)"),
  };
}

}  // namespace ch08
