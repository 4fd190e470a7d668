// What every step of the chapter 8 ladder shares: argument checks, the causal bound, and how
// many key tiles a block of query rows needs.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ch08.cuh"
#include "device/launch.cuh"
#include "device/math.cuh"

namespace ch08::solution {

using wb::ceil_div;  // grids and tile counts: harness/device/math.cuh

// 2^x on the MUFU unit alone (ex2.approx.ftz). exp2f() compiles to the form that keeps results
// below 2^-126 as denormals: a compare and two multiplies around every MUFU.EX2, three more
// instructions per score in a softmax whose other work is about four. A weight that small
// counts for nothing beside the row's largest (1), so the flash kernels flush it to 0.
// 2^-inf = 0, as the masked scores need.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The launchers' preconditions (ch08.cuh). B * H becomes gridDim.y (or z), at most 65535.
inline void check_args(const char* who, int B, int H, int Sq, int Sk, int D) {
  std::string bad;
  if (B < 1 || H < 1 || Sq < 1 || Sk < 1)
    bad = "B, H, Sq and Sk must be at least 1";
  else if (D < 8 || D > 128 || D % 8 != 0)
    bad = "D must be a multiple of 8 from 8 to 128, not " + std::to_string(D);
  else if (static_cast<long long>(B) * H > 65535)
    bad = "B * H is more than 65535 (one grid row per head)";
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
  else if (D < 8 || D > 128 || D % 8 != 0)
    bad = "D must be a multiple of 8 from 8 to 128, not " + std::to_string(D);
  else if (static_cast<long long>(B) * Hq > 65535)
    bad = "B * Hq is more than 65535 (one grid row per head)";
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
