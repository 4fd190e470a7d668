// What every step shares: element conversions and the epilogue, applied to one FP32
// accumulator and rounded once to the output type.
#pragma once
#include <cuda_bf16.h>

#include "ch09.cuh"

namespace ch09::solution {

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(bf16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ bf16 from_f32<bf16>(float v) { return __float2bfloat16(v); }

// acc (FP32) -> bias added in FP32 -> GELU in FP32 -> one rounding to T.
template <class T>
__device__ __forceinline__ T epilogue(float acc, const T* b, int n, Epilogue epi) {
  if (epi != Epilogue::None) acc += to_f32(b[n]);
  if (epi == Epilogue::BiasGelu) acc = gelu_tanh(acc);
  return from_f32<T>(acc);
}

inline unsigned ceil_div(long long a, long long b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace ch09::solution
