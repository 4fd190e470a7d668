// The learner's launchers as the harness sees them. Nothing to edit here.
#include "ch08.cuh"
#include "declare/op.cuh"

namespace ch08 {

WB_VARIANTS(ch08_student, wb::Role::Student) {
  using namespace student;
  const std::string dir = "chapters/ch08_flash_attention/";
  // Exercise 1 gets an FP32 scores buffer of B * H * Sq * Sk floats as `scratch`.
  const auto scores_buffer = [](const wb::Shape& s) {
    return scratch_bytes_f32(static_cast<int>(s["B"]), static_cast<int>(s["H"]), static_cast<int>(s["Sq"]),
                             static_cast<int>(s["Sk"]));
  };
  // Exercise 5 gets decode_scratch_bytes(...) for the partial results of its chunks.
  const auto decode_scratch = [](const wb::Shape& s) {
    return decode_scratch_bytes(static_cast<int>(s["B"]), static_cast<int>(s["Hq"]), static_cast<int>(s["Hkv"]),
                                static_cast<int>(s["Lmax"]), static_cast<int>(s["D"]));
  };
  return {
      wb::variant("attention/f32", "ex1_unfused_attention", &unfused_attention)
          .in_file(dir + "ex1_unfused_attention.cu")
          .with_workspace(scores_buffer),
      wb::variant("attention_probs/f32", "ex2_fused_scores_softmax", &fused_scores_softmax)
          .in_file(dir + "ex2_fused_scores_softmax.cu"),
      wb::variant("attention/f32", "ex3_flash_attention_f32", &flash_attention_f32)
          .in_file(dir + "ex3_flash_attention_f32.cu"),
      wb::variant("attention/bf16", "ex4_flash_attention_mma", &flash_attention_mma)
          .in_file(dir + "ex4_flash_attention_mma.cu")
          .needs_cc(80),
      wb::variant("attention_decode/bf16", "ex5_decode_attention", &decode_attention)
          .in_file(dir + "ex5_decode_attention.cu")
          .with_workspace(decode_scratch)
          .needs_cc(80),
      wb::variant("attention_ragged/bf16", "ex6_ragged_attention", &ragged_attention)
          .in_file(dir + "ex6_ragged_attention.cu")
          .needs_cc(80),
  };
}

}  // namespace ch08
