// Sums and maxima across a warp and across a thread block.
//
// Chapter 3 teaches the reduction: a tree of pairwise combines, first in shared memory, then,
// for the last five steps, inside one warp with shuffles (the learner writes it there, with
// __shfl_down_sync, the result landing in lane 0). Chapter 6 turns it into the form every
// later kernel uses, kept here: the xor butterfly, after which EVERY lane holds the result
// (its v3_warp_shuffle), and the block's result handed to every thread after one barrier
// (its v4_row_in_registers). Chapters 6 to 9 and the GPT-2 model call these.
//
// The butterfly's step with offset o (16, 8, 4, 2, 1) combines lane l with lane l ^ o. The
// partners of a step compute a + b and b + a, which IEEE addition makes bit-identical, so
// all 32 lanes end with the same bits.
#pragma once
#include <cuda_runtime.h>

namespace wb {

struct Sum {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The 32 lanes' values combined with op (Sum, Max, or any associative and commutative
// combine of a type __shfl_xor_sync moves: float, int, a 64-bit key ...), the result in every
// lane. Every lane of the warp must call it (the full mask).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) { return warp_reduce(v, Sum{}); }
__device__ __forceinline__ float warp_max(float v) { return warp_reduce(v, Max{}); }

// The sum over a block of kBlock threads, returned to every thread, bit-identical in every
// thread. `exchange` is a __shared__ array of kBlock / 32 floats. One barrier. Two consecutive
// calls must use two different arrays (the second call's writes would otherwise race with
// the first call's reads); a third call may reuse the first array, since every thread has
// passed the second call's barrier, and so finished reading the first array, by then.
template <int kBlock>
__device__ __forceinline__ float block_sum(float v, float* exchange) {
  static_assert(kBlock % 32 == 0 && kBlock >= 32 && kBlock <= 1024, "a whole number of warps");
  constexpr int kWarps = kBlock / 32;
  v = warp_sum(v);
  if constexpr (kWarps == 1) {
    return v;
  } else {
    if (threadIdx.x % 32 == 0) exchange[threadIdx.x / 32] = v;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += exchange[w];  // same order in every thread
    return total;
  }
}

// The warps' results of a block combined with op, returned to every thread: v is this
// warp's result (the same in every lane); lane 0 puts it in exchange[warp] (kBlock / 32
// values of shared memory), one barrier, then every thread folds exchange[0], exchange[1],
// ... in that order. Any T and op: chapter 6's v5_welford folds its (n, mean, M2) triples.
template <int kBlock, class T, class Op>
__device__ __forceinline__ T block_fold(T v, Op op, T* exchange) {
  if (threadIdx.x % 32 == 0) exchange[threadIdx.x / 32] = v;
  __syncthreads();
  T all = exchange[0];
#pragma unroll
  for (int w = 1; w < kBlock / 32; ++w) all = op(all, exchange[w]);
  return all;
}

// The block's values combined with op, returned to every thread: each warp's result goes to
// exchange[warp] (kBlock / 32 floats of shared memory), one barrier, then every thread folds
// exchange[0], exchange[1], ... in that order (block_fold). Before `exchange` is written
// again (the next call on it), a __syncthreads() must let every thread finish reading it.
template <int kBlock, class Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float* exchange) {
  static_assert(kBlock % 32 == 0 && kBlock >= 32 && kBlock <= 1024, "a whole number of warps");
  return block_fold<kBlock>(warp_reduce(v, op), op, exchange);
}

}  // namespace wb
