// The solution ladder as the harness sees it (ladder.cuh says what each step changes).
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch07::solution {

WB_VARIANTS(ch07_solution, wb::Role::Solution) {
  const auto scratch = [](const wb::Shape& s) { return workspace_bytes(s["B"]); };
  return {
      wb::variant("softmax/f32", "v1_three_pass", &softmax_three_pass),
      wb::variant("softmax/f32", "v2_online", &softmax_online),
      wb::variant("topk/f32", "v3_block_per_row", &topk_block),
      wb::variant("softmax_topk/f32", "v3_block_per_row", &softmax_topk_block),
      wb::variant("softmax_topk_probs/f32", "v3_block_per_row", &softmax_topk_probs_block),
      wb::variant("topk/f32", "v4_split_row", &topk_split).with_workspace(scratch).tuned_by(split_space("topk")),
      wb::variant("softmax_topk/f32", "v4_split_row", &softmax_topk_split)
          .with_workspace(scratch)
          .tuned_by(split_space("softmax_topk")),
      wb::variant("softmax_topk_probs/f32", "v4_split_row", &softmax_topk_probs_split)
          .with_workspace(scratch)
          .tuned_by(split_space("softmax_topk_probs")),
      wb::variant("topk/f32", "v5_radix_select", &topk_radix).with_workspace(scratch).tuned_by(radix_space("topk")),
      wb::variant("softmax_topk/f32", "v5_radix_select", &softmax_topk_radix)
          .with_workspace(scratch)
          .tuned_by(radix_space("softmax_topk")),
      wb::variant("softmax_topk_probs/f32", "v5_radix_select", &softmax_topk_probs_radix)
          .with_workspace(scratch)
          .tuned_by(radix_space("softmax_topk_probs")),
  };
}

}  // namespace ch07::solution
