// Elements and 16-byte vectors.
//
//   aligned16(p)     whether p may be read or written 16 bytes at a time (float4, uint4):
//                    chapter 1 teaches it (v3_vectorized: a float4 load needs an address that
//                    is a multiple of 16, or the kernel faults); chapters 4 and 9 test it
//                    before taking their vector paths.
//   to_float(x)      an element (FP32 or BF16) widened to FP32, and
//   from_float<T>(v) an FP32 value rounded once (to nearest even) to the element type:
//                    chapter 3 teaches the pattern (BF16 in memory, FP32 in the arithmetic:
//                    exercise 3's sum); its solution, chapters 6 and 9 and the GPT-2 model
//                    use these.
//   load_once16(p)   16 bytes that the kernel reads once and nobody writes while it runs
//                    (a GEMV's weights): the read-only path, not kept in L1
//                    (ld.global.nc.L1::no_allocate), and issued where it is written, so a
//                    kernel can put it before a wait (chapter 9's v14_w4a16_loads_ahead).
//   widen8(f, u)     the 8 BF16 of a 16-byte vector u widened to FP32 f[0..7], in order, and
//   narrow8(f)       8 FP32 values rounded (to nearest even) into one such vector: chapter 10's
//                    depthwise and epilogue stores, and its reference's BN and ReLU passes.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

namespace wb {

__host__ __device__ inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// asm volatile: the compiler keeps it in program order with the other volatile asm (a
// griddepcontrol.wait after it stays after it), rather than sinking it to its first use.
__device__ __forceinline__ uint4 load_once16(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void widen8(float (&f)[8], const uint4& u) {
  const auto* p = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = __bfloat1622float2(p[i]);
    f[2 * i] = v.x;
    f[2 * i + 1] = v.y;
  }
}

__device__ __forceinline__ uint4 narrow8(const float (&f)[8]) {
  uint4 u;
  auto* p = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) p[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return u;
}

}  // namespace wb
