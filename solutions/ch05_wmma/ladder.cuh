// The chapter 5 solution ladder: one file per step, each defining one launcher template.
// Each file instantiates it for the type combinations it supports (ch05.cuh lists them).
#pragma once
#include "ch05.cuh"

namespace ch05::solution {

#define CH05_LAUNCHER(name)      \
  template <class In, class Out> \
  void name(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream)

#define CH05_INSTANTIATE(name, In, Out) \
  template void name<In, Out>(int, int, int, const In*, const In*, const Out*, Out*, cudaStream_t)

// The four FP16/BF16 pairs (f16_f32, f16_f16, bf16_f32, bf16_bf16), and those with INT8 (i8_i32).
#define CH05_INSTANTIATE_16BIT(name)            \
  CH05_INSTANTIATE(name, __half, float);        \
  CH05_INSTANTIATE(name, __half, __half);       \
  CH05_INSTANTIATE(name, __nv_bfloat16, float); \
  CH05_INSTANTIATE(name, __nv_bfloat16, __nv_bfloat16)
#define CH05_INSTANTIATE_ALL(name) \
  CH05_INSTANTIATE_16BIT(name);    \
  CH05_INSTANTIATE(name, int8_t, int32_t)

// v1_wmma_global.cu — one warp per 16 x 16 tile of D; WMMA fragments loaded straight from
// global memory (through a small shared-memory patch at the edges). All five type pairs.
CH05_LAUNCHER(v1_wmma_global);

// v2_wmma_smem.cu — a block of 2 x 2 warps shares 32 x 32 tiles of A and B staged in
// shared memory. All five type pairs.
CH05_LAUNCHER(v2_wmma_smem);

// v3_wmma_warp_tiles.cu — 128 x 128 block tiles, 8 warps each computing a 64 x 32 warp
// tile (4 x 2 fragments) from registers; 16-byte loads where rows are aligned. All five.
CH05_LAUNCHER(v3_wmma_warp_tiles);

// v4_cp_async_pipeline.cu — v3 fed by a 3-stage cp.async pipeline (sm_80+). All five.
CH05_LAUNCHER(v4_cp_async_pipeline);

// v5_mma_sync.cu — ldmatrix + mma.sync.m16n8k16 on an XOR-swizzled shared-memory layout,
// 128 x 256 block tiles, 4 stages (sm_80+). FP16 and BF16 inputs.
CH05_LAUNCHER(v5_mma_sync);

// v6_wgmma_tma.cu — Hopper only (sm_90a): TMA, mbarriers, wgmma, warp specialisation.
// Shapes it has no path for (K or N not a multiple of 8) go to v5. FP16 and BF16 inputs.
CH05_LAUNCHER(v6_wgmma_tma);

// v7_mma_sync_k64.cu — back to mma.sync (any sm_80+ GPU): v5 with 64-deep stages (3 stages,
// 144 KB), addresses worked out once before the main loop, and an epilogue staged in shared
// memory (16-byte stores). GPUs with less shared memory per block run v5. FP16 and BF16.
CH05_LAUNCHER(v7_mma_sync_k64);

// v8_mma_sync_int8.cu — INT8 on mma.sync.m16n8k32 with v7's pipeline (128 along K per stage);
// B's 8-bit columns through ldmatrix.trans and byte permutes. GPUs with less shared memory
// per block run v4's INT8 kernel. INT8 only (sm_80+).
CH05_LAUNCHER(v8_mma_sync_int8);

// v11_wgmma_int8.cu — Hopper only (sm_90a): INT8 on wgmma (s8 -> s32) in the 8-bit TMA
// pipeline of v9, B transposed once (the prepare step). K not a multiple of 16 goes to v8.
CH05_LAUNCHER(v11_wgmma_int8);

// v14_mma_sync_tma.cu — Hopper only (sm_90a): v7's mma.sync tiles fed by TMA, stages released
// by mbarriers, one block per SM walking its tiles. Shapes TMA cannot describe (K or N not a
// multiple of 8) go to v7. FP16 and BF16 inputs.
CH05_LAUNCHER(v14_mma_sync_tma);

// v15_mma_sync_tma_int8.cu — Hopper only (sm_90a): v8's INT8 mma.sync tiles on v14's pipeline,
// B read as the transposed copy of v11's prepare step (plain ldmatrix, no byte permutes).
// K not a multiple of 16 goes to v8.
CH05_LAUNCHER(v15_mma_sync_tma_int8);

// --- FP8 (the ops of ch05.cuh's "FP8" section) -----------------------------------------------

// f1_fp8_cuda_cores.cu — exercise 4's solution: the quantizer, and both GEMMs on CUDA cores
// (exact products of decoded E4M3 values, FP32 sums per block of 128). Any GPU from sm_80.
Fp8QuantizeFn f1_fp8_quantize;
Fp8GemmFn f1_fp8_gemm;
Fp8GemmFn f1_fp8_gemm_block;

// hopper/v9_wgmma_fp8.cu — Hopper only: wgmma e4m3, TMA, promotion into FP32 every 128 of K.
Fp8GemmFn v9_wgmma_fp8;
// hopper/v10_wgmma_fp8_block.cu — v9 with the block scales applied at each promotion.
Fp8GemmFn v10_wgmma_fp8_block;
// hopper/v12_wgmma_fp8_overlap.cu — v9 with two partial-sum sets that alternate by stage: a
// stage's promotion runs while the next stage's wgmmas do (wait_group 1).
Fp8GemmFn v12_wgmma_fp8_overlap;
// hopper/v13_wgmma_fp8_block_overlap.cu — v10 on v12's schedule.
Fp8GemmFn v13_wgmma_fp8_block_overlap;
// hopper/v16_wgmma_fp8_wide.cu — per-tensor scales on 128 x 192 tiles (m64n192k32 per consumer),
// the epilogue through TMA stores, pairs of CTAs multicasting the B box they share.
Fp8GemmFn v16_wgmma_fp8_wide;
// hopper/v17_wgmma_fp8_block_wide.cu — v16's tiles and epilogue with v13's block-scaled promotion.
Fp8GemmFn v17_wgmma_fp8_block_wide;

}  // namespace ch05::solution
