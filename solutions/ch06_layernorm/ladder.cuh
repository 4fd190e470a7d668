// The chapter 6 solution ladder: one file per step, each declaring its launchers here.
// Every step computes the same thing (ch06.cuh); they differ in how a row meets the threads.
#pragma once
#include "ch06.cuh"

namespace ch06::solution {

// v1_thread_per_row.cu — one thread per row, three passes over the row in global memory.
ResidualLayerNormFn v1_residual_layernorm;
ResidualRmsNormFn v1_residual_rmsnorm;

// v2_block_smem_reduce.cu — one block per row, strided passes, shared-memory tree sums.
// Also the fallback of v4 to v6 for rows longer than they hold in registers.
LayerNormF32Fn v2_layernorm_f32;
ResidualLayerNormFn v2_residual_layernorm;
ResidualRmsNormFn v2_residual_rmsnorm;

// v3_warp_shuffle.cu — one warp per row, xor-shuffle sums, 16-byte loads where the rows
// allow: the decode form of exercise 4.
ResidualLayerNormFn v3_residual_layernorm;
ResidualRmsNormFn v3_residual_rmsnorm;

// v4_row_in_registers.cu — each thread loads its share of the row once into registers
// (16-byte packs), the statistics are two passes over registers; a warp per row up to
// 1024 BF16, a block per row beyond; templated on packs per thread.
LayerNormF32Fn v4_layernorm_f32;
ResidualLayerNormFn v4_residual_layernorm;
ResidualRmsNormFn v4_residual_rmsnorm;

// v5_welford.cu — v4 with the mean and variance in ONE pass (Welford per thread, Chan's
// merge across lanes and warps): the numerics lesson.
ResidualLayerNormFn v5_residual_layernorm;

// v6_persistent.cu — v4's kernel in persistent blocks: a grid sized to the GPU, gamma and
// beta loaded once into registers, the next row's loads issued before this row's sums.
LayerNormF32Fn v6_layernorm_f32;
ResidualLayerNormFn v6_residual_layernorm;
ResidualRmsNormFn v6_residual_rmsnorm;

}  // namespace ch06::solution
