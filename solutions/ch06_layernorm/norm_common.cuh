// Pieces every step of the chapter 6 ladder shares: the two norms as a type, 16-byte packs
// of BF16 or FP32 elements, warp and block sums, and the grid arithmetic. Each step's own
// idea lives in its vK_*.cu file; this header holds only the plumbing.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ch06.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "device/math.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"

namespace ch06::solution {

// Which statistic a kernel takes: LayerNorm (mean and variance, gamma and beta) or RMSNorm
// (the mean square only, gamma only).
enum class Norm { Layer, Rms };

using wb::ceil_div;  // grids: harness/device/math.cuh

// The first element of row n: size_t, because N * ld passes 2^31 at 32768 x 65536.
template <class T>
__device__ __forceinline__ T* row_ptr(T* p, int n, int ld) {
  return p + static_cast<size_t>(n) * ld;
}

using wb::from_float;  // FP32 to the element type, rounded once (harness/device/vec.cuh)
using wb::to_float;    // the element to FP32

// --- 16 bytes of elements: 8 BF16 or 4 floats, held as four 32-bit words ------------------
//
//   BF16:  w[0] = | e1 | e0 |   w[1] = | e3 | e2 |  ...   (the lower address in the low half)
//   FP32:  w[0] = e0, w[1] = e1, ...
//
// Kept packed in registers (a BF16 row costs 2 bytes of register per element, not 4) and
// widened on use: a BF16 is the top half of an FP32, so widening is a shift or a mask.
template <class T>
struct Pack {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "BF16 or FP32");
  static constexpr int kN = 16 / sizeof(T);  // elements per pack
  uint32_t w[4];

  __device__ __forceinline__ float get(int i) const {
    if constexpr (sizeof(T) == 4) {
      return __uint_as_float(w[i]);
    } else {
      return (i & 1) ? __uint_as_float(w[i / 2] & 0xFFFF0000u) : __uint_as_float(w[i / 2] << 16);
    }
  }
  // Rounds each value once to T (round to nearest even).
  __device__ __forceinline__ void set(const float (&v)[kN]) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if constexpr (sizeof(T) == 4) {
        w[k] = __float_as_uint(v[k]);
      } else {
        const __nv_bfloat162 two = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);  // .x = low half
        w[k] = *reinterpret_cast<const uint32_t*>(&two);
      }
    }
  }
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = 0;
  }
  // One 16-byte load: p must be 16-byte aligned.
  __device__ __forceinline__ void load16(const T* p) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
  }
  __device__ __forceinline__ void store16(T* p) const {
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  }
  // The first m elements (0 <= m <= kN) one by one, any alignment; the rest become 0.
  __device__ __forceinline__ void load_scalar(const T* p, int m) {
    float v[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) v[k] = k < m ? to_float(p[k]) : 0.0f;
    set(v);  // exact: each value is already a T
  }
  __device__ __forceinline__ void store_scalar(T* p, int m) const {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (k < m) p[k] = from_float<T>(get(k));
    }
  }
  // All kN elements with one 16-byte access when `vec` (aligned and whole), else m scalars.
  __device__ __forceinline__ void load(const T* p, int m, bool vec) {
    if (vec)
      load16(p);
    else
      load_scalar(p, m);
  }
  __device__ __forceinline__ void store(T* p, int m, bool vec) const {
    if (vec)
      store16(p);
    else
      store_scalar(p, m);
  }
};

// --- a row's statistics out -----------------------------------------------------------------

// Row n's statistics, as every step writes them: its mean (LayerNorm only) and 1 / std.
template <Norm kNorm>
__device__ __forceinline__ void store_stats(float* mean_out, float* rstd_out, int n, float mean, float rstd) {
  if constexpr (kNorm == Norm::Layer) mean_out[n] = mean;
  rstd_out[n] = rstd;
}

// --- sums across lanes and warps ----------------------------------------------------------

// warp_sum: the xor butterfly, the warp's total in every lane, bit-identical in all 32.
// block_sum<kBlock>(v, exchange): the block's total in every thread after one barrier.
// Both come from harness/device/reduce.cuh, which the later chapters and the GPT-2 model use.
using wb::block_sum;
using wb::warp_sum;

// How many blocks of `kernel` fit on the GPU at once (SMs x blocks per SM, from
// wb::blocks_per_gpu in harness/runtime/launch_helpers.cuh), at least 1.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads) {
  return std::max(1, wb::blocks_per_gpu(kernel, threads));
}

// Every row can be read with 16-byte loads when the base pointers are 16-byte aligned and
// a row is a whole number of 16-byte words long (ld * sizeof(T) % 16 == 0).
template <class T>
inline bool rows_aligned(int ld, std::initializer_list<const void*> ptrs) {
  if ((static_cast<size_t>(ld) * sizeof(T)) % 16 != 0) return false;
  for (const void* p : ptrs) {
    if (p != nullptr && reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  }
  return true;
}

}  // namespace ch06::solution
