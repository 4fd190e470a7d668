// What the chapter's solution kernels share: the folded BatchNorm epilogue.
//
// BatchNorm at inference is y = (v - mean) / sqrt(var + eps) * gamma + beta per channel, an
// affine map of v, so it folds into one multiply-add:
//   scale = gamma / sqrt(var + eps)      shift = beta - mean * scale
//   y     = relu((acc + bias) * scale + shift + residual)
// A block folds the parameters of its channels once (fold_bn), then every element of the
// tile costs two FMAs, an add and a max (apply_epilogue); epilogue_store8 does it for 8
// neighbouring channels of one pixel and stores them (v6 and v8's staged epilogues).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "ch10.cuh"

namespace ch10::solution {

struct Folded {
  float bias, scale, shift;
};

// The folded parameters of channel k (k < K).
__device__ __forceinline__ Folded fold_bn(const BnParams& bn, int k) {
  const float scale = bn.gamma[k] * rsqrtf(bn.var[k] + bn.eps);
  return {bn.bias[k], scale, bn.beta[k] - bn.mean[k] * scale};
}

// The epilogue of one element: acc is the complete FP32 sum over C x R x S.
__device__ __forceinline__ float apply_epilogue(float acc, const Folded& f, float residual) {
  const float v = fmaf(acc + f.bias, f.scale, f.shift) + residual;
  return fmaxf(v, 0.0f);
}

// The epilogue of 8 neighbouring channels kc .. kc + 7 of one output pixel, stored at y + at
// (at = m K + kc): v holds their complete FP32 sums, f their folded parameters. vec (K % 8 ==
// 0, y and the residual 16-byte aligned): one 16-byte load of the residual, one 16-byte store
// of y; otherwise element by element, the channels from K on skipped.
__device__ __forceinline__ void epilogue_store8(const float (&v)[8], const Folded* f, const bf16* residual, bf16* y,
                                                int64_t at, int kc, int K, bool vec) {
  if (vec) {
    float res[8] = {};
    if (residual) {
      const uint4 u = *reinterpret_cast<const uint4*>(residual + at);
      const auto* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 r = __bfloat1622float2(h[e]);
        res[2 * e] = r.x;
        res[2 * e + 1] = r.y;
      }
    }
    uint4 u;
    auto* o = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      o[e] = __floats2bfloat162_rn(apply_epilogue(v[2 * e], f[2 * e], res[2 * e]),
                                   apply_epilogue(v[2 * e + 1], f[2 * e + 1], res[2 * e + 1]));
    }
    *reinterpret_cast<uint4*>(y + at) = u;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if (kc + e >= K) break;
      const float res = residual ? __bfloat162float(residual[at + e]) : 0.0f;
      y[at + e] = __float2bfloat16(apply_epilogue(v[e], f[e], res));
    }
  }
}

}  // namespace ch10::solution
