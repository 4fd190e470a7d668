// Chapter 7's solution ladder: each step in its own file, each a launcher of ch07.cuh's types.
//
//   v1_three_pass      softmax: block per row, max / sum / normalize, three reads of the row
//   v2_online          softmax: block per row, the online (m, s) pair: two reads
//   v3_block_per_row   top-k forms: block per row, warp lists in registers, one read
//   v4_split_row       top-k forms: a row split over many CTAs, the last one merges; the
//                      shape picks threads, CTAs per row and loads per thread (tuned)
//   v5_radix_select    top-k forms: v4's split, each chunk in registers, top k by radix select
//   v6_cluster_select  top-k forms: a row per thread-block cluster, v5's select, the CTAs meeting in
//                      distributed shared memory (sm_90); other shapes and GPUs go to v5
//   v7_warp_floor      top-k forms: v5's split, each CTA keeping what reaches a floor from warp votes,
//                      the last CTA of the row doing the one exact select; rows without float4 loads
//                      go to v5
//   v8_cluster_floor   top-k forms: one row floor, the k-th largest of the row's 128 warp maxima, and
//                      the few logits that reach it ranked by counting, no select on the common path;
//                      at batch <= 8 on v6's cluster (every CTA counts), beyond on v7's blocks (the
//                      last block counts); rows of 65,537 to 131,072 logits (the blocks: up to 131,072)
//                      with float4 loads; other shapes go to v6 at small batch, v7 beyond
#pragma once
#include "ch07.cuh"
#include "tune/tune.h"

namespace ch07::solution {

SoftmaxFn softmax_three_pass;  // v1_three_pass.cu
SoftmaxFn softmax_online;      // v2_online.cu

// A top-k step's three forms: topk_<step>, softmax_topk_<step>, softmax_topk_probs_<step>.
#define CH07_TOPK_FORMS(step)              \
  TopKFn topk_##step, softmax_topk_##step; \
  SoftmaxTopKProbsFn softmax_topk_probs_##step

CH07_TOPK_FORMS(block);          // v3_block_per_row.cu
CH07_TOPK_FORMS(split);          // v4_split_row.cu
CH07_TOPK_FORMS(radix);          // v5_radix_select.cu
CH07_TOPK_FORMS(cluster);        // v6_cluster_select.cu
CH07_TOPK_FORMS(warp_floor);     // v7_warp_floor.cu
CH07_TOPK_FORMS(cluster_floor);  // v8_cluster_floor.cu
// v8's form for large batches at every batch (the checks on every shape class; not benchmarked by default).
CH07_TOPK_FORMS(cluster_floor_blocks);

// v4's tunable space for one op (threads, splits, vec); see v4_split_row.cu.
const wb::tune::Space& split_space(const char* op);
// v5's tunable space for one op (logits per thread); see v5_radix_select.cu.
const wb::tune::Space& radix_space(const char* op);

}  // namespace ch07::solution
