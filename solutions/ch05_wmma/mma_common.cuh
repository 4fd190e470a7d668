// What v5 and the Hopper bonus share besides the PTX wrappers (ldmatrix and mma.sync, with
// their lane maps, are in harness/device/mma.cuh): the epilogue that writes mma.sync's
// accumulator layout (d0, d1 = row g, cols 2q, 2q + 1; d2, d3 = row g + 8) to D.
#pragma once
#include <cstdint>
#include <type_traits>

#include "ch05.cuh"

namespace ch05::solution {

// Writes D(r, c) and D(r, c + 1) from two FP32 accumulators: C added, rounded once to Out,
// elements outside M x N skipped; one 2-element store when both are inside and aligned.
template <class Out>
__device__ __forceinline__ void store_pair(Out* D, const Out* C, int M, int N, int r, int c, float v0, float v1) {
  if (r >= M || c >= N) return;
  const size_t at = size_t(r) * N + c;
  if (C != nullptr) {
    v0 += to_acc<float>(C[at]);
    if (c + 1 < N) v1 += to_acc<float>(C[at + 1]);
  }
  if (c + 1 < N && at % 2 == 0) {  // c is even, so `at` is even whenever N is
    if constexpr (std::is_same_v<Out, float>) {
      *reinterpret_cast<float2*>(D + at) = make_float2(v0, v1);
    } else if constexpr (std::is_same_v<Out, __half>) {
      *reinterpret_cast<__half2*>(D + at) = __floats2half2_rn(v0, v1);
    } else {
      *reinterpret_cast<__nv_bfloat162*>(D + at) = __floats2bfloat162_rn(v0, v1);
    }
  } else {
    D[at] = to_out<Out>(v0);
    if (c + 1 < N) D[at + 1] = to_out<Out>(v1);
  }
}

}  // namespace ch05::solution
