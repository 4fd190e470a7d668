// The second kernel of the split-KV decode steps (v5, v6): the chunks' partial results of each
// query head merged by their log-sum-exp,
//
//   lse = log sum_c exp(lse_c)        o = sum_c exp(lse_c - lse) o_c
//
// (exp(lse_c - lse) is the share of the softmax's mass that chunk c holds; an empty chunk has
// lse_c = -inf and weight 0). part_o is (chunks, rows, D) FP32, part_lse (chunks, rows).
#pragma once
#include <cuda_bf16.h>

#include "cuda/pdl.cuh"

namespace ch08::solution {
namespace {

// grid (rows = B * Hq), kDecodeMergeThreads threads. Waits first: when launched as a
// programmatic dependent of the chunk kernel (v6), it may start before that kernel ends.
constexpr int kDecodeMergeThreads = 128;
__global__ void __launch_bounds__(kDecodeMergeThreads)
    decode_merge_kernel(const float* __restrict__ part_o, const float* __restrict__ part_lse, __nv_bfloat16* __restrict__ o,
                        float* __restrict__ lse, int chunks, int D) {
  wb::pdl_wait();
  const size_t rows = gridDim.x, r = blockIdx.x;
  float M = -INFINITY;  // the largest lse_c (every thread computes the same, reading the same floats)
  for (int c = 0; c < chunks; ++c) M = fmaxf(M, part_lse[c * rows + r]);
  if (M == -INFINITY) {  // no chunk saw a key (L_b = 0 breaks the contract; keep it finite anyway)
    for (int d = threadIdx.x; d < D; d += kDecodeMergeThreads) o[r * D + d] = __float2bfloat16_rn(0.0f);
    if (threadIdx.x == 0) lse[r] = -INFINITY;
    return;
  }
  float total = 0.0f;
  for (int c = 0; c < chunks; ++c) total += expf(part_lse[c * rows + r] - M);
  const float row_lse = M + logf(total);
  for (int d = threadIdx.x; d < D; d += kDecodeMergeThreads) {
    float acc = 0.0f;
    for (int c = 0; c < chunks; ++c) {
      const float w = expf(part_lse[c * rows + r] - row_lse);  // the chunk's share of the mass
      acc = fmaf(w, part_o[(c * rows + r) * D + d], acc);
    }
    o[r * D + d] = __float2bfloat16_rn(acc);
  }
  if (threadIdx.x == 0) lse[r] = row_lse;
}

}  // namespace
}  // namespace ch08::solution
