// The learner's launchers as the harness sees them. Nothing to edit here.
#include "ch07.cuh"
#include "declare/op.cuh"

namespace ch07 {

WB_VARIANTS(ch07_student, wb::Role::Student) {
  using namespace student;
  const std::string dir = "chapters/ch07_softmax_topk/";
  const auto scratch = [](const wb::Shape& s) { return workspace_bytes(s["B"]); };
  return {
      wb::variant("softmax/f32", "ex1_softmax_three_pass", &softmax_three_pass)
          .in_file(dir + "ex1_softmax_three_pass.cu"),
      wb::variant("softmax/f32", "ex2_online_softmax", &softmax_online).in_file(dir + "ex2_online_softmax.cu"),
      wb::variant("topk/f32", "ex3_topk", &topk).in_file(dir + "ex3_topk.cu").with_workspace(scratch),
      wb::variant("softmax_topk/f32", "ex4_softmax_topk", &softmax_topk)
          .in_file(dir + "ex4_softmax_topk.cu")
          .with_workspace(scratch),
      wb::variant("softmax_topk_probs/f32", "ex4_softmax_topk_probs", &softmax_topk_probs)
          .in_file(dir + "ex4_softmax_topk.cu")
          .with_workspace(scratch),
  };
}

}  // namespace ch07
