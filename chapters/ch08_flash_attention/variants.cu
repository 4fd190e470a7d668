// The learner's launchers as the harness sees them. Nothing to edit here.
#include "ch08.cuh"
#include "scratch.h"
#include "declare/op.cuh"

namespace ch08 {

WB_VARIANTS(ch08_student, wb::Role::Student) {
  using namespace student;
  const std::string dir = "chapters/ch08_flash_attention/";
  // Exercise 1 gets an FP32 scores buffer of B * H * Sq * Sk floats as `scratch`, exercise 5
  // decode_scratch_bytes(...) for the partial results of its chunks (scratch.h).
  return {
      wb::variant("attention/f32", "ex1_unfused_attention", &unfused_attention)
          .in_file(dir + "ex1_unfused_attention.cu")
          .with_workspace(scores_scratch),
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
