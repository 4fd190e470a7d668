// The chapter 3 solution ladder: one file per step, each declaring its launchers here.
#pragma once
#include "ch03.cuh"

namespace ch03::solution {

// v1_interleaved.cu — one element per thread, a shared-memory tree with interleaved
// (modulo) addressing, one launch per factor of 256.
ReduceFn v1_sum_f32, v1_max_f32;
ReduceBf16Fn v1_sum_bf16;
WorkspaceFn v1_workspace_bytes;

// v2_sequential.cu — the same tree with sequential addressing: no idle lanes in a warp.
ReduceFn v2_sum_f32, v2_max_f32;
ReduceBf16Fn v2_sum_bf16;

// v3_warp_shuffle.cu — the last steps of the tree with __shfl_down_sync.
ReduceFn v3_sum_f32, v3_max_f32;
ReduceBf16Fn v3_sum_bf16;

// (v1 to v3 share the multi-pass driver of multipass.cuh, so v1_workspace_bytes serves all three.)

// v4_coarsened.cu — thread coarsening: a grid sized to the GPU, each thread keeps F vector
// loads (4 elements each) in flight per trip of a grid-stride loop; a small second kernel
// adds the per-block partials. F is the coarsening factor the benchmark sweeps.
template <int F>
struct V4 {
  static ReduceFn sum_f32, max_f32;
  static ReduceBf16Fn sum_bf16;
};
WorkspaceFn v4_workspace_bytes;

// v5_one_pass.cu — v4's loop in a single kernel: the last block to finish (a ticket
// counter in the workspace) adds the partials and resets the counter.
ReduceFn v5_sum_f32, v5_max_f32;
ReduceBf16Fn v5_sum_bf16;
WorkspaceFn v5_workspace_bytes;

// v6_row_sum.cu — row sums: a group of lanes (8 or a warp) per short row, a block per long
// row, and several blocks per row (v5's ticket, one counter per row) when there are too
// few rows to fill the GPU.
RowSumFn v6_row_sum;
RowWorkspaceFn v6_row_workspace_bytes;

// v7_atomic_sum.cu — beside v5, not after it: v4's loop, and each block's total added
// straight into *out with atomicAdd (zeroed on the stream first). No workspace, one
// kernel; the last bits change from run to run, which chapter 3's sums accept.
ReduceFn v7_atomic_sum_f32;
WorkspaceFn v7_workspace_bytes;

}  // namespace ch03::solution
