// The chapter 8 solution ladder: one file per step, each declaring its launchers here.
// Every step computes what ch08.cuh defines; they differ in what crosses DRAM, and in which
// units do the arithmetic.
#pragma once
#include "ch08.cuh"

namespace ch08::solution {

// v1_unfused.cu — the three ops as separate kernels: scores into a buffer, the mask, the
// row softmax; then O = P V. Naive kernels, one thread per output element.
ScoresSoftmaxF32Fn v1_probs_f32;
AttentionF32Fn v1_attention_f32;
// O (bh x Sq x D) = P (bh x Sq x Sk) V, FP32: v1's last kernel, v2 reuses it.
void pv_f32(const float* p, const float* v, float* o, int bh, int Sq, int Sk, int D, cudaStream_t stream);

// v2_fused_scores_softmax.cu — scores, mask and softmax in ONE kernel: a block of 64 query
// rows, key tiles staged in shared memory, two sweeps over the keys (running max and sum,
// then recompute and write p once). Attention: v2's p into the buffer, then v1's P V.
ScoresSoftmaxF32Fn v2_probs_f32;
AttentionF32Fn v2_attention_f32;

// v3_flash_f32.cu — flash attention on CUDA cores: a block of 64 query rows loops over
// tiles of 32 keys, online softmax, the output in registers; nothing of size Sq x Sk exists.
AttentionF32Fn v3_attention_f32;

// v4_flash_mma_sync.cu — FlashAttention-2 in BF16 on tensor cores: Q fragments in
// registers, K and V double-buffered through cp.async, ldmatrix, exp2 with the scale
// folded in, P reused from registers as the A operand of P V, one normalisation at the end.
AttentionBf16Fn v4_attention_bf16;
// The same kernel on grouped heads (the G query heads of a kv head as one matrix of G * Sq
// rows: K and V read once per block for all of them) and on ragged, token-major batches.
AttentionGqaBf16Fn v4_attention_gqa_bf16;
RaggedAttentionBf16Fn v4_attention_ragged_bf16;

// v7_flash_wgmma_tma.cu (bonus, Hopper sm_90a) — v4's algorithm on wgmma fed by TMA: a
// producer warpgroup, two consumer warpgroups of 64 query rows, 128-key tiles, P from registers
// as wgmma's A operand (kernel: hopper/flash_wgmma_kernel.cu).
AttentionBf16Fn v7_attention_bf16;

// v8_flash_wgmma_pingpong.cu (bonus, Hopper sm_90a) — v7 with FlashAttention-3's scheduling:
// the two consumer warpgroups take turns on the tensor cores through named barriers, and each
// runs its softmax of tile t while its O += P_{t-1} V_{t-1} is still on the tensor cores
// (kernel: hopper/flash_pingpong_kernel.cu).
AttentionBf16Fn v8_attention_bf16;

// v5_split_kv_decode.cu — decode against a KV cache (flash-decoding): each sequence's keys
// cut into chunks, one CTA per (chunk, sequence, kv head) computing the G query heads of
// the group on CUDA cores, then a second kernel merging the chunks by their log-sum-exp.
DecodeAttentionBf16Fn v5_decode_bf16;
// The same kernels where the cache's length is a position counter, as a model's decode step
// keeps it: pos[b] tokens were cached before this step, and the step's own key and value are
// already at j = pos[b], so the step attends to keys 0 .. pos[b] (L_b = pos[b] + 1). The
// counter is read on the device, so one launch — or one CUDA Graph of it — serves every step
// while the step's last kernel advances pos (models/gpt2/gpu: chapter 9's fused decode step).
// 0 <= pos[b] < L_max. Otherwise as v5_decode_bf16.
void v5_decode_at_pos_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* pos, bf16* o, float* lse,
                           int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream);

// v6_split_kv_mma.cu — v5 at the bandwidth limit: the group's query heads as the rows of
// mma.sync fragments (S = Q K^T and O += P V on tensor cores, P from registers), warps
// splitting each tile's keys, a 3-stage cp.async pipeline, a grid of exactly one wave, and
// the merge folded in: the last CTA of each group to finish (a ticket counter) merges its
// chunks (groups of up to 4 query heads; larger ones keep the merge kernel, as a programmatic
// dependent). Same contract and scratch size as v5; the scratch starts zeroed (its ticket
// counters) and v6 leaves it so.
DecodeAttentionBf16Fn v6_decode_bf16;
void v6_decode_at_pos_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* pos, bf16* o, float* lse,
                           int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream);

}  // namespace ch08::solution
