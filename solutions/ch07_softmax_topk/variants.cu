// The solution ladder as the harness sees it (ladder.cuh says what each step changes).
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch07::solution {

WB_VARIANTS(ch07_solution, wb::Role::Solution) {
  const auto scratch = [](const wb::Shape& s) { return workspace_bytes(s["B"]); };
  wb::VariantList v = {
      wb::variant("softmax/f32", "v1_three_pass", &softmax_three_pass),
      wb::variant("softmax/f32", "v2_online", &softmax_online),
      wb::variant("topk/f32", "v3_block_per_row", &topk_block),
      wb::variant("softmax_topk/f32", "v3_block_per_row", &softmax_topk_block),
      wb::variant("softmax_topk_probs/f32", "v3_block_per_row", &softmax_topk_probs_block),
  };
  // The split steps: the three top-k forms, each with the workspace and its op's tunable space.
  const auto split_step = [&](const char* step, TopKFn* topk, TopKFn* softmax_topk, SoftmaxTopKProbsFn* probs,
                              const wb::tune::Space& (*space)(const char*)) {
    v.push_back(wb::variant("topk/f32", step, topk).with_workspace(scratch).tuned_by(space("topk")));
    v.push_back(
        wb::variant("softmax_topk/f32", step, softmax_topk).with_workspace(scratch).tuned_by(space("softmax_topk")));
    v.push_back(wb::variant("softmax_topk_probs/f32", step, probs)
                    .with_workspace(scratch)
                    .tuned_by(space("softmax_topk_probs")));
  };
  split_step("v4_split_row", &topk_split, &softmax_topk_split, &softmax_topk_probs_split, &split_space);
  split_step("v5_radix_select", &topk_radix, &softmax_topk_radix, &softmax_topk_probs_radix, &radix_space);
  // The routed steps: the three top-k forms where the step serves the shape, v5 (and its
  // workspace) elsewhere; the note says where.
  const auto routed_step = [&](const char* step, TopKFn* topk, TopKFn* softmax_topk, SoftmaxTopKProbsFn* probs,
                               const char* note) {
    v.push_back(wb::variant("topk/f32", step, topk).with_workspace(scratch).with_note(note));
    v.push_back(wb::variant("softmax_topk/f32", step, softmax_topk).with_workspace(scratch).with_note(note));
    v.push_back(wb::variant("softmax_topk_probs/f32", step, probs).with_workspace(scratch).with_note(note));
  };
  // v6: a cluster per row.
  routed_step("v6_cluster_select", &topk_cluster, &softmax_topk_cluster, &softmax_topk_probs_cluster,
              "a thread-block cluster per row (sm_90) while each CTA of the batch has an SM and a row is at most "
              "131,072 logits; v5 elsewhere");
  // v7: every CTA keeps what reaches a floor from warp votes; the last CTA of the row selects.
  routed_step("v7_warp_floor", &topk_warp_floor, &softmax_topk_warp_floor, &softmax_topk_probs_warp_floor,
              "rows that allow float4 loads, up to 524,288 logits; v5 elsewhere");
  // v8: one row floor from the row's 128 warp maxima, the survivors ranked by counting.
  routed_step("v8_cluster_floor", &topk_cluster_floor, &softmax_topk_cluster_floor, &softmax_topk_probs_cluster_floor,
              "rows with float4 loads: a 16-CTA cluster per row for the top-k forms while each CTA of the batch has an "
              "SM (rows of 65,537 to 131,072 logits), v7's blocks with the warps' maxima published beyond (rows of up "
              "to 131,072); v6 elsewhere at small batch, v7 beyond");
  // v8's form for large batches (v7's blocks, the maxima published) at every batch: its checks on every
  // shape class; left out of the default benchmark.
  const char* blocks_note = "v8's blocks at every batch (rows of up to 16 blocks with float4 loads); v7 elsewhere";
  v.push_back(wb::variant("topk/f32", "v8_cluster_floor_blocks", &topk_cluster_floor_blocks)
                  .with_workspace(scratch)
                  .is_slow()
                  .with_note(blocks_note));
  v.push_back(wb::variant("softmax_topk/f32", "v8_cluster_floor_blocks", &softmax_topk_cluster_floor_blocks)
                  .with_workspace(scratch)
                  .is_slow()
                  .with_note(blocks_note));
  v.push_back(wb::variant("softmax_topk_probs/f32", "v8_cluster_floor_blocks", &softmax_topk_probs_cluster_floor_blocks)
                  .with_workspace(scratch)
                  .is_slow()
                  .with_note(blocks_note));
  return v;
}

}  // namespace ch07::solution
