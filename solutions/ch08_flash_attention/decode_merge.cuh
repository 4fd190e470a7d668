// The merge of the split-KV decode steps (v5, v6): the chunks' partial results of each query
// head merged by their log-sum-exp,
//
//   lse = log sum_c exp(lse_c)        o = sum_c exp(lse_c - lse) o_c
//
// (exp(lse_c - lse) is the share of the softmax's mass that chunk c holds; an empty chunk has
// lse_c = -inf and weight 0). part_o is (chunks, rows, D) FP32, part_lse (chunks, rows).
//
// A row's merge is two steps: merge_weights (its lse and the chunks' weights) and then
// merge_columns (o, a few columns at a time). v5 runs them as a kernel of its own
// (decode_merge_kernel, a block per row), and so does v6 for groups of more than 4 query
// heads; for smaller groups v6 runs them inside its chunk kernel, in the last CTA of each
// group (a warp per row for the weights, then the CTA's threads over all its rows' columns).
// All give the same bits: the arithmetic is always that of the 128-thread block.
#pragma once
#include <cuda_bf16.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "attention_common.cuh"
#include "ch08.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"

namespace ch08::solution {
namespace {

// The chunks are read in parallel. Step 1: each of 128 threads takes every 128th chunk's
// lse_c, the 128 values are reduced to the row's max and sum, and the weights exp(lse_c - lse)
// go to shared memory. Step 2: thread d sums the chunks' o_c[d] in chunk order with several
// loads in flight. (Rather than every thread walking all the chunks three times, one load
// after another.)
//
// Step 1 is done by a TEAM of kTeam threads: the block (kTeam = 128, one thread per thread of
// the 128) or one warp (kTeam = 32: lane i plays threads i, i + 32, i + 64 and i + 96, which
// are lane i of the 128's four warps). `rank` is the thread's place in its team.
constexpr int kDecodeMergeThreads = 128;
constexpr int kDecodeMergeWarps = kDecodeMergeThreads / 32;

template <int kTeam>
__device__ __forceinline__ void merge_team_sync() {
  if constexpr (kTeam == 32)
    __syncwarp();
  else
    __syncthreads();
}

// The max (kMax) or sum over the 128 threads of one value each; every member of the team gets
// it. v[j]: the value of thread rank + j * kTeam. Each warp of the 128 is reduced by the xor
// butterfly, then the four warps' results are combined in order 0, 1, 2, 3: through `red`
// (kDecodeMergeWarps floats of shared memory) when the team is the block, in registers when it
// is a warp (the four values a lane holds are the four warps'). The same operations in the same
// order either way, so the same bits.
template <bool kMax, int kTeam>
__device__ __forceinline__ float merge_reduce(float (&v)[kDecodeMergeThreads / kTeam], float* red) {
  using Op = std::conditional_t<kMax, wb::Max, wb::Sum>;  // harness/device/reduce.cuh
  constexpr int kPlays = kDecodeMergeThreads / kTeam;
#pragma unroll
  for (int j = 0; j < kPlays; ++j) v[j] = wb::warp_reduce(v[j], Op{});
  if constexpr (kTeam == kDecodeMergeThreads) {
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v[0];
    __syncthreads();
    float all = red[0];
#pragma unroll
    for (int w = 1; w < kDecodeMergeWarps; ++w) all = Op{}(all, red[w]);
    __syncthreads();  // red is free for the next call
    return all;
  } else {
    static_assert(kTeam == 32, "a team is the block of 128 threads or one warp");
    float all = v[0];
#pragma unroll
    for (int w = 1; w < kDecodeMergeWarps; ++w) all = Op{}(all, v[w]);
    return all;
  }
}

// Step 1 of row r's merge, by a team of kTeam threads: returns the row's lse, and leaves the
// chunks' weights exp(lse_c - lse) in `weight` (kDecodeTargetCtas floats of shared memory for
// this row alone: chunks <= decode_splits <= that), the team synced. -inf when no chunk saw a
// key (L_b = 0 breaks the contract; the row's o is then 0): the weights are not written.
// red: kDecodeMergeWarps floats (the block team only). The lse_c are read through L2
// (__ldcg): in v6 other CTAs of the same kernel wrote them, and an L1 line could be stale.
template <int kTeam>
__device__ __forceinline__ float merge_weights(const float* part_lse, size_t rows, size_t r, int chunks, int rank,
                                               float* weight, float* red) {
  constexpr int kPlays = kDecodeMergeThreads / kTeam;
  float m[kPlays];
#pragma unroll
  for (int j = 0; j < kPlays; ++j) {
    m[j] = -INFINITY;
    for (int c = rank + j * kTeam; c < chunks; c += kDecodeMergeThreads) {
      weight[c] = __ldcg(part_lse + c * rows + r);
      m[j] = fmaxf(m[j], weight[c]);
    }
  }
  const float M = merge_reduce<true, kTeam>(m, red);  // the largest lse_c
  if (M == -INFINITY) return -INFINITY;
  float t[kPlays];  // weight[c] of these chunks was written by this same thread: no sync needed
#pragma unroll
  for (int j = 0; j < kPlays; ++j) {
    t[j] = 0.0f;
    for (int c = rank + j * kTeam; c < chunks; c += kDecodeMergeThreads) t[j] += expf(weight[c] - M);
  }
  const float row_lse = M + logf(merge_reduce<false, kTeam>(t, red));
  for (int c = rank; c < chunks; c += kTeam) weight[c] = expf(weight[c] - row_lse);  // the chunk's share of the mass
  merge_team_sync<kTeam>();
  return row_lse;
}

// Step 2: columns d0 .. d0 + kCols - 1 of row r's o, each summed over the chunks in chunk order
// (as thread d of the 128-thread block sums column d). kCols = 4 reads the four with one
// 16-byte load per chunk (d0 % 4 == 0, part_o 16-byte aligned). The loads of kUnroll chunks
// are issued together, then their multiply-adds: the sum is a chain of L2 round trips, one
// per kUnroll chunks. Read through L2, as the lse_c.
template <int kCols, int kUnroll>
__device__ __forceinline__ void merge_columns(const float* part_o, const float* weight, size_t rows, size_t r,
                                              int chunks, int D, int d0, float (&acc)[kCols]) {
  static_assert(kCols == 1 || kCols == 4, "one column, or four with a 16-byte load");
  using Piece = std::conditional_t<kCols == 4, float4, float>;
  const auto load = [&](int c) { return __ldcg(reinterpret_cast<const Piece*>(part_o + (c * rows + r) * D + d0)); };
  const auto add = [&](int c, const Piece& v) {
    if constexpr (kCols == 4) {
      acc[0] = fmaf(weight[c], v.x, acc[0]);
      acc[1] = fmaf(weight[c], v.y, acc[1]);
      acc[2] = fmaf(weight[c], v.z, acc[2]);
      acc[3] = fmaf(weight[c], v.w, acc[3]);
    } else {
      acc[0] = fmaf(weight[c], v, acc[0]);
    }
  };
#pragma unroll
  for (int i = 0; i < kCols; ++i) acc[i] = 0.0f;
  int c = 0;
  for (; c + kUnroll <= chunks; c += kUnroll) {
    Piece v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load(c + u);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) add(c + u, v[u]);
  }
  for (; c < chunks; ++c) add(c, load(c));
}

// grid (rows = B * Hq), kDecodeMergeThreads threads: the block merges row blockIdx.x (v5's
// second kernel), thread d taking column d. Waits first: launched as a programmatic dependent
// of the chunk kernel, it may start before that kernel ends.
__global__ void __launch_bounds__(kDecodeMergeThreads)
    decode_merge_kernel(const float* __restrict__ part_o, const float* __restrict__ part_lse,
                        __nv_bfloat16* __restrict__ o, float* __restrict__ lse, int chunks, int D) {
  __shared__ float weight[kDecodeTargetCtas];  // lse_c, then exp(lse_c - lse); chunks <= decode_splits <= this
  __shared__ float red[kDecodeMergeWarps];
  wb::pdl_wait();
  const size_t rows = gridDim.x, r = blockIdx.x;
  const float row_lse = merge_weights<kDecodeMergeThreads>(part_lse, rows, r, chunks, threadIdx.x, weight, red);
  for (int d = threadIdx.x; d < D; d += kDecodeMergeThreads) {
    float acc[1] = {0.0f};
    if (row_lse != -INFINITY) merge_columns<1, 8>(part_o, weight, rows, r, chunks, D, d, acc);
    o[r * D + d] = __float2bfloat16_rn(acc[0]);
  }
  if (threadIdx.x == 0) lse[r] = row_lse;
}

// What both split-KV steps check before any launch (ch08.cuh): the shapes, the grouped heads,
// and the scratch their partial results go to.
inline void check_decode_args(const char* who, int B, int Hq, int Hkv, int L_max, int D, const void* scratch) {
  check_args(who, B, Hq, 1, L_max, D);
  check_groups(who, Hq, Hkv);
  if (scratch == nullptr) {
    throw std::invalid_argument(std::string(who) + ": needs decode_scratch_bytes(B, Hq, Hkv, L_max, D) of scratch");
  }
}

}  // namespace
}  // namespace ch08::solution
