// The second kernel of the split-KV decode steps (v5, v6): the chunks' partial results of each
// query head merged by their log-sum-exp,
//
//   lse = log sum_c exp(lse_c)        o = sum_c exp(lse_c - lse) o_c
//
// (exp(lse_c - lse) is the share of the softmax's mass that chunk c holds; an empty chunk has
// lse_c = -inf and weight 0). part_o is (chunks, rows, D) FP32, part_lse (chunks, rows).
#pragma once
#include <cuda_bf16.h>

#include "ch08.cuh"
#include "cuda/pdl.cuh"

namespace ch08::solution {
namespace {

// grid (rows = B * Hq), kDecodeMergeThreads threads. Waits first: when launched as a
// programmatic dependent of the chunk kernel (v6), it may start before that kernel ends.
//
// The chunks are read in parallel: each thread takes every 128th chunk's lse_c, the block
// reduces them to the row's max and sum, the weights exp(lse_c - lse) go to shared memory,
// and then thread d sums the chunks' o_c[d] in chunk order with 8 loads in flight, rather
// than every thread walking all the chunks three times, one load after another.
constexpr int kDecodeMergeThreads = 128;
constexpr int kDecodeMergeWarps = kDecodeMergeThreads / 32;

// The block's max (kMax) or sum of one value per thread; every thread gets it. red: kDecodeMergeWarps floats.
template <bool kMax>
__device__ __forceinline__ float merge_block_reduce(float v, float* red) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const float u = __shfl_xor_sync(0xFFFFFFFFu, v, off);
    v = kMax ? fmaxf(v, u) : v + u;
  }
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float all = red[0];
#pragma unroll
  for (int w = 1; w < kDecodeMergeWarps; ++w) all = kMax ? fmaxf(all, red[w]) : all + red[w];
  __syncthreads();  // red is free for the next call
  return all;
}

__global__ void __launch_bounds__(kDecodeMergeThreads)
    decode_merge_kernel(const float* __restrict__ part_o, const float* __restrict__ part_lse, __nv_bfloat16* __restrict__ o,
                        float* __restrict__ lse, int chunks, int D) {
  __shared__ float weight[kDecodeTargetCtas];  // lse_c, then exp(lse_c - lse); chunks <= decode_splits <= this
  __shared__ float red[kDecodeMergeWarps];
  wb::pdl_wait();
  const size_t rows = gridDim.x, r = blockIdx.x;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < chunks; c += kDecodeMergeThreads) {
    weight[c] = part_lse[c * rows + r];
    m = fmaxf(m, weight[c]);
  }
  const float M = merge_block_reduce<true>(m, red);  // the largest lse_c
  if (M == -INFINITY) {  // no chunk saw a key (L_b = 0 breaks the contract; keep it finite anyway)
    for (int d = threadIdx.x; d < D; d += kDecodeMergeThreads) o[r * D + d] = __float2bfloat16_rn(0.0f);
    if (threadIdx.x == 0) lse[r] = -INFINITY;
    return;
  }
  float t = 0.0f;
  for (int c = threadIdx.x; c < chunks; c += kDecodeMergeThreads) t += expf(weight[c] - M);
  const float row_lse = M + logf(merge_block_reduce<false>(t, red));
  for (int c = threadIdx.x; c < chunks; c += kDecodeMergeThreads) {
    weight[c] = expf(weight[c] - row_lse);  // the chunk's share of the mass
  }
  __syncthreads();
  for (int d = threadIdx.x; d < D; d += kDecodeMergeThreads) {
    float acc = 0.0f;
#pragma unroll 8
    for (int c = 0; c < chunks; ++c) acc = fmaf(weight[c], part_o[(c * rows + r) * D + d], acc);
    o[r * D + d] = __float2bfloat16_rn(acc);
  }
  if (threadIdx.x == 0) lse[r] = row_lse;
}

}  // namespace
}  // namespace ch08::solution
