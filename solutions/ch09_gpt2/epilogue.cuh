// What every step shares: element conversions, the 16-byte dot products of the GEMVs (on
// BF16 or FP32 weights, on INT8 weights: steps 5 and 6, and on INT4 weights: steps 10 and 11), the epilogue, applied to
// one FP32 accumulator and rounded once to the output type, and the QKV epilogue's store of the token's key and value
// into the cache (steps 6 and 9).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "ch09.cuh"
#include "device/math.cuh"
#include "device/vec.cuh"
#include "ladder.cuh"

namespace ch09::solution {

using wb::from_float;  // FP32 to the element type, rounded once (harness/device/vec.cuh)
using wb::to_float;    // FP32 or BF16 to FP32
__device__ __forceinline__ float to_float(int8_t v) { return float(v); }  // an INT8 weight, unscaled

// acc (FP32) -> bias added in FP32 -> GELU in FP32 -> one rounding to T. epilogue_value takes
// the bias as a value already loaded (ignored for Epilogue::None).
template <class T>
__device__ __forceinline__ T epilogue_value(float acc, float bias, Epilogue epi) {
  if (epi != Epilogue::None) acc += bias;
  if (epi == Epilogue::BiasGelu) acc = gelu_tanh(acc);
  return from_float<T>(acc);
}
template <class T>
__device__ __forceinline__ T epilogue(float acc, const T* b, int n, Epilogue epi) {
  return epilogue_value<T>(acc, epi != Epilogue::None ? to_float(b[n]) : 0.0f, epi);
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

// --- INT8 weights (W8A16: steps 5 and 6) ---------------------------------------------------

// Four int8 in one 32-bit word (lowest byte first) -> four floats, without the int-to-float
// instruction (16 per clock per SM on sm_80 and sm_90, a quarter or less of the FMA rate: at
// one weight per byte it would come close to limiting the GEMV before DRAM does). Flipping
// the sign bit of a byte gives b + 128 as an unsigned byte u; placed in the low mantissa bits
// of the float 2^23 (bits 0x4B0000uu) it makes the float 8388608 + u exactly; subtracting
// 8388608 + 128 leaves b. One byte permute and one add per weight, both at full rate.
__device__ __forceinline__ void i8x4_to_f32(uint32_t word, float (&f)[4]) {
  const uint32_t u = word ^ 0x80808080u;
  // __byte_perm(a, b, s): result byte i is byte (nibble i of s) of the 8 bytes {b, a}, a's
  // bytes numbered 0-3, b's 4-7. Selector 0x754j: byte j of u, then 0x00, 0x00, 0x4B.
  f[0] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540)) - 8388736.0f;
  f[1] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7541)) - 8388736.0f;
  f[2] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7542)) - 8388736.0f;
  f[3] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7543)) - 8388736.0f;
}

// The dot product of 16 int8 weights (one 16-byte piece of q) with the matching 16 BF16
// elements of x (two 16-byte pieces: lo = elements 0-7, hi = 8-15), in FP32, unscaled. Steps
// 5 and 6 both sum a row's pieces with it, so on the same row and x they agree bit for bit.
__device__ __forceinline__ float dot16_w8(const uint4& w, const uint4& lo, const uint4& hi) {
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};  // 4 weights each
  const uint4 xs[2] = {lo, hi};
  const auto* x2 = reinterpret_cast<const __nv_bfloat162*>(xs);  // 8 pairs: pair j = elements 2j, 2j + 1
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float f[4];
    i8x4_to_f32(words[j], f);
    const float2 a = __bfloat1622float2(x2[2 * j]), b = __bfloat1622float2(x2[2 * j + 1]);
    s += f[0] * a.x + f[1] * a.y + f[2] * b.x + f[3] * b.y;
  }
  return s;
}

// --- INT4 weights (W4A16: steps 10 and 11) ---------------------------------------------------

// One 16-byte piece of an INT4 row (32 codes, the layout of ch09.cuh's int4_byte_in_row) times
// x[k0 .. k0 + 31] (FP32: x8 = 8 float4), with the group's zero point taken off each code, in
// FP32, unscaled:  sum_i x[k0 + i] * (q[k0 + i] - zero).
// No int-to-float instruction, and no shift per code: the float whose bits are 0x4B000000 | c
// is 2^23 + c exactly for any c < 2^23, so
//   low nibble   (v & 0x0F) | 0x4B000000  ->  2^23 + q         minus (2^23 + zero)       = q - zero
//   high nibble  (v & 0xF0) | 0x4B000000  ->  2^23 + 16 q      minus (2^23 + 16 zero)    = 16 (q - zero)
// each one LOP3 and one FADD, both exact (|q - zero| <= 15); v = word >> 8 b brings byte b of a
// word down (three shifts per word of 8 codes). The high nibbles sum 16 times their value in a
// second accumulator, scaled back by 1/16 (exact) at the end. Each product x * (q - zero) is
// exact in FP32 (8 bits of BF16 times 5 bits), as in step 5. The constants 2^23 + zero and
// 2^23 + 16 zero are built from zero's bits the same way.
__device__ __forceinline__ float dot32_w4(const uint4& w, const float4* x8, uint32_t zero) {
  const float c_lo = __uint_as_float(0x4B000000u | zero), c_hi = __uint_as_float(0x4B000000u | (zero << 4));
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
  float lo = 0.0f, hi = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float4 a = x8[2 * j], b = x8[2 * j + 1];  // x[k0 .. k0 + 3] (low nibbles), x[k0 + 4 .. k0 + 7] (high)
    const float xa[4] = {a.x, a.y, a.z, a.w}, xb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int byte = 0; byte < 4; ++byte) {
      const uint32_t v = words[j] >> (8 * byte);
      lo = fmaf(xa[byte], __uint_as_float((v & 0x0Fu) | 0x4B000000u) - c_lo, lo);
      hi = fmaf(xb[byte], __uint_as_float((v & 0xF0u) | 0x4B000000u) - c_hi, hi);
    }
  }
  return lo + hi * 0.0625f;
}

// x of an INT4 GEMV staged in shared memory as FP32 (steps 10 and 11), with one empty 16-byte
// slot after every 8: float4 f of x lives at slot f + f / 8. Lane l reads the 8 float4 of its
// piece p = l + 32 i at slots 9p .. 9p + 7; consecutive lanes are then 144 bytes apart, 4 banks
// further on each, and the 8 lanes of each quarter-warp phase of an LDS.128 meet 8 different
// groups of 4 banks. Unpadded they would be 128 bytes apart, on the same 4 banks: 8-way conflicts.
__host__ __device__ inline int int4_x_slot(int f) { return f + f / 8; }
inline size_t int4_x_smem_bytes(int K) { return size_t(K / 4 + K / 32) * 16; }  // K % 32 == 0
constexpr int kInt4MaxK = 8192;  // K at most: the staged row, 36 KB, fits without an opt-in

// The QKV row's elements C .. 2C are the token's key, 2C .. 3C its value (head h = c / D,
// element d = c % D): stored at position *pos of the layer's cache, [H][P][D].
template <class T>
__device__ __forceinline__ void store_kv(const KvCacheTarget<T>& kv, int n, T v) {
  const int C = kv.H * kv.D;
  if (n < C) return;  // a query element
  const bool is_v = n >= 2 * C;
  const int c = n - (is_v ? 2 * C : C), h = c / kv.D, d = c % kv.D;
  T* cache = is_v ? kv.v_cache : kv.k_cache;
  cache[(size_t(h) * kv.P + *kv.pos) * kv.D + d] = v;
}

using wb::ceil_div;  // grids: harness/device/math.cuh

}  // namespace ch09::solution
