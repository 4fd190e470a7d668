// What every step shares: element conversions, the 16-byte dot product of the GEMVs, and the
// epilogue, applied to one FP32 accumulator and rounded once to the output type.
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

// The dot product of two 16-byte pieces (4 floats, or 8 BF16) in FP32, in a fixed order:
// the GEMVs of steps 4 and 6 sum a row the same way, so they agree bit for bit.
__device__ __forceinline__ float dot16(const uint4& a, const uint4& b, float) {
  return __uint_as_float(a.x) * __uint_as_float(b.x) + __uint_as_float(a.y) * __uint_as_float(b.y) +
         __uint_as_float(a.z) * __uint_as_float(b.z) + __uint_as_float(a.w) * __uint_as_float(b.w);
}
__device__ __forceinline__ float dot16(const uint4& a, const uint4& b, bf16) {
  const auto* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
  const auto* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 fa = __bfloat1622float2(pa[i]), fb = __bfloat1622float2(pb[i]);
    s += fa.x * fb.x + fa.y * fb.y;
  }
  return s;
}

inline unsigned ceil_div(long long a, long long b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace ch09::solution
