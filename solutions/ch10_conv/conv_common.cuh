// What the chapter's solution kernels share: the folded BatchNorm epilogue.
//
// BatchNorm at inference is y = (v - mean) / sqrt(var + eps) * gamma + beta per channel, an
// affine map of v, so it folds into one multiply-add:
//   scale = gamma / sqrt(var + eps)      shift = beta - mean * scale
//   y     = relu((acc + bias) * scale + shift + residual)
// A block folds the parameters of its channels once (fold_bn), then every element of the
// tile costs two FMAs, an add and a max (apply_epilogue).
#pragma once
#include <cuda_bf16.h>

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

}  // namespace ch10::solution
