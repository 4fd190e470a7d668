// What every step of the chapter 8 ladder shares: argument checks, the causal bound, how
// many key tiles a block of query rows needs, and two register helpers of the kernels (the
// FP32 steps' scale_and_mask, the tensor-core steps' zero_fill).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ch08.cuh"
#include "runtime/launch_helpers.cuh"
#include "device/math.cuh"

namespace ch08::solution {

using wb::ceil_div;  // grids and tile counts: harness/device/math.cuh

using wb::fast_exp2;  // 2^x on the special-function unit: harness/device/math.cuh

// Every element of a (kA, kB, kC) block of accumulators set to 0, fully unrolled (they are
// registers): the tensor-core steps' fragments before a sum starts.
template <int kA, int kB, int kC>
__device__ __forceinline__ void zero_fill(float (&acc)[kA][kB][kC]) {
#pragma unroll
  for (int a = 0; a < kA; ++a)
#pragma unroll
    for (int b = 0; b < kB; ++b)
#pragma unroll
      for (int c = 0; c < kC; ++c) acc[a][b][c] = 0.0f;
}

// The FP32 steps' scores of query row i against keys j0, j0 + 16, ... (kCols of them, one
// thread's share of a key tile): scaled, or -inf where the key is past Sk or the causal mask
// (bottom-right aligned) hides it.
template <int kCols>
__device__ __forceinline__ void scale_and_mask(float (&s)[kCols], int i, int j0, int Sq, int Sk, float scale,
                                               bool causal) {
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int j = j0 + 16 * c;
    const bool visible = j < Sk && (!causal || j <= i + Sk - Sq);
    s[c] = visible ? s[c] * scale : -INFINITY;
  }
}

// What is wrong with the head size D and the B * heads grid rows ("" when nothing): D a
// multiple of 8 from 8 to 128, B * heads at most 65535 (gridDim.y or z). heads_name names the
// heads in the message ("H", "Hq").
inline std::string bad_head_or_rows(int D, int B, int heads, const char* heads_name) {
  if (D < 8 || D > 128 || D % 8 != 0) return "D must be a multiple of 8 from 8 to 128, not " + std::to_string(D);
  if (static_cast<long long>(B) * heads > 65535) {
    return std::string("B * ") + heads_name + " is more than 65535 (one grid row per head)";
  }
  return "";
}

// The launchers' preconditions (ch08.cuh). B * H becomes gridDim.y (or z), at most 65535.
inline void check_args(const char* who, int B, int H, int Sq, int Sk, int D) {
  const std::string bad =
      B < 1 || H < 1 || Sq < 1 || Sk < 1 ? "B, H, Sq and Sk must be at least 1" : bad_head_or_rows(D, B, H, "H");
  if (!bad.empty()) throw std::invalid_argument(std::string(who) + ": " + bad);
}

// Grouped heads (ch08.cuh): Hkv kv heads shared by Hq query heads, Hkv dividing Hq.
inline void check_groups(const char* who, int Hq, int Hkv) {
  if (Hkv < 1 || Hq % Hkv != 0) {
    throw std::invalid_argument(std::string(who) + ": Hkv must divide Hq (Hq = " + std::to_string(Hq) +
                                ", Hkv = " + std::to_string(Hkv) + ")");
  }
}

// A ragged batch (ch08.cuh): one grid row per (sequence, query head).
inline void check_ragged_args(const char* who, int B, int T, int Hq, int Hkv, int max_seqlen, int D) {
  std::string bad;
  if (B < 1 || Hq < 1 || T < 0 || max_seqlen < 0)
    bad = "B and Hq must be at least 1, T and max_seqlen at least 0";
  else if (max_seqlen > T)
    bad = "max_seqlen is more than T";
  else
    bad = bad_head_or_rows(D, B, Hq, "Hq");
  if (!bad.empty()) throw std::invalid_argument(std::string(who) + ": " + bad);
  check_groups(who, Hq, Hkv);
}

// The head size a kernel is compiled for: D rounded up to 32, 64, 96 or 128 (the columns
// past D are loaded as zeros and never stored).
inline int padded_head(int D) { return (D + 31) / 32 * 32; }

// q, k, v and o 16-byte aligned: the tensor-core kernels move 16 bytes per copy (cp.async, TMA).
inline void check_aligned(const char* who, const bf16* q, const bf16* k, const bf16* v, const bf16* o) {
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k), static_cast<const void*>(v),
                        static_cast<const void*>(o)}) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
      throw std::invalid_argument(std::string(who) + ": q, k, v and o must be 16-byte aligned (ch08.cuh)");
    }
  }
}

// Calls f(std::integral_constant<int, kD>{}) with kD = padded_head(D): 32, 64, 96 or 128, the
// head sizes a kernel is instantiated for.
template <class F>
void with_padded_head(int D, F&& f) {
  if (!wb::with_constant<32, 64, 96>(padded_head(D), f)) f(std::integral_constant<int, 128>{});
}

// Key tiles (of `bc` keys) that a block of query rows q0 .. q0 + rows - 1 must visit: all of
// them without the mask; with it, up to the tile holding the last key its last row sees,
// q_last + Sk - Sq (bottom-right alignment). 0 when even the last row sees no key.
__host__ __device__ inline int key_tiles(int q0, int rows, int Sq, int Sk, int bc, bool causal) {
  const int all = (Sk + bc - 1) / bc;
  if (!causal) return all;
  const int q_last = (q0 + rows < Sq ? q0 + rows : Sq) - 1;
  const int last_key = q_last + Sk - Sq;
  if (last_key < 0) return 0;
  const int need = last_key / bc + 1;
  return need < all ? need : all;
}

}  // namespace ch08::solution
