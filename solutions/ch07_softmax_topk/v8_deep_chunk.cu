// v8 — v7's plan with twice the logits a thread: half the blocks, and half of a block's fixed
// work per logit.
//
// Over v7: at 256 x 128,256 (k 50) v7 runs at about half of the copy bandwidth, and Nsight
// Compute says the SM, not the DRAM, is the limit: about 920 instructions a warp for 1,024
// logits (issue slots 58 % busy), of which the logits' own work (a load, a max, an exp and an
// add each) is under 200. The rest is paid once a block whatever its chunk: the warp floor's
// j rounds of a redux, the eight ballots of the block's floor, three barriers, the survivors'
// scan, the pair, the fence and the row's counter, and the last block's select (one block in
// 16 does it). v8 changes what a block holds and how it scans it, not the plan:
//
//   1. 64 logits a thread (16 float4 loads, all in flight at once): a block holds 256 x 64 =
//      16,384 logits, so a row of 128,256 takes 8 blocks, not 16. Every fixed cost of a block
//      above is paid half as often per logit, the last block selects from 8 blocks'
//      survivors instead of 16, and the row's counter and fences are half as many. The price:
//      about 100 registers a thread, so 2 blocks an SM (16 warps) instead of v7's 4 (32).
//   2. The maximum by groups of 8 logits (two float4s): eight independent chains, the group
//      maxima kept. The survivors' scan asks the group first: a thread whose maximum reaches
//      the floor (one or two a warp) compares 8 group maxima and then the 8 logits of the rare
//      group that reaches it, where v7 compared every logit (64 compares a warp here).
//   3. One instruction fewer per exp: v7 computes exp2((x - top) * log2 e), a subtraction and
//      a product. Here it is exp2(fma(x, log2 e, -c)) with c = top * log2 e rounded, one fused
//      multiply-add; the rounding of c (its residue r = top * log2 e - c, exact by one more
//      fma) multiplies every term of the warp by 2^r, so the warp's sum is multiplied by 2^-r
//      once. The exponent is rounded once, where v7 rounds it twice.
//   4. No round trip to learn who is last. In v7 every block's thread 0 adds to the row's
//      counter with an atomic and the whole block waits for the old count to come back (the
//      fence, then a round trip to L2) before it may exit or select. Here the row's last chunk
//      (s = splits - 1, the row's last block to be dispatched) is the one that selects: every
//      other block counts itself in with a release reduction (red.release: no value comes
//      back) and exits at once; the designated block publishes its own survivors, then polls
//      the counter with an acquire load until the other splits - 1 blocks are in. Blocks are
//      dispatched in the order of their index (single-pass scans with a look-back rely on the
//      same), so those it waits for are running or done.
//
//   per block:  256 threads x 64 logits (16,384) in registers, read once
//   per row:    splits = ceil(V / 16,384) blocks (8 at V = 128,256; 16 at 262,144), at most 64
//   B = 256, V = 128,256:  2,048 blocks of ~16,032 logits
//
// The rest is v7's (warp_floor.cuh): the warp floor, the block's floor, the survivors' keys in
// the block's slice of the workspace, the exact select over the chunk read again for a block
// with too many survivors, the last block's select over the published keys.
//
// What it does not serve: the batches v6 serves (a cluster of 16 blocks a row while every block
// of the batch has an SM: B <= 8 at rows of at most 131,072 logits on 132 SMs) go to v6; rows
// without float4 loads and rows over 64 x 16,384 logits go to v7 (which sends them to v5).
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v7_warp_floor,v8_deep_chunk
#include <cstdint>

#include "ladder.cuh"
#include "radix_select.cuh"
#include "row_topk.cuh"
#include "runtime/errors.cuh"
#include "split_common.cuh"
#include "warp_floor.cuh"

namespace ch07::solution {
namespace {

constexpr int kGroup = 8;  // logits a group maximum covers: two float4s

// Blocks an SM for kSlots logits a thread: 64 -> 2 (128 registers), 48 -> 3 (80 registers).
template <int kSlots>
constexpr int kDeepBlocks = kSlots > 48 ? 2 : 3;

// Chunk s of row b, already in registers (v, -inf past its end): v7's steps, the maximum and
// the survivors by groups, the exp by one fma. Called by the whole block.
template <int kSlots>
__device__ __forceinline__ void deep_chunk_step(const float (&v)[kSlots], int b, int s, const Job& job,
                                                BlockShared& bs) {
  static_assert(kSlots % kGroup == 0, "whole groups");
  constexpr int kGroups = kSlots / kGroup;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int k = job.k, per = job.per;
  const int begin = job.begin(s), end = job.end(s);
  Key* const slice = job.ws.keys + size_t(b) * kRowKeys + size_t(s) * per;  // [0]: the header, then the keys

  start_chunk(bs);

  // 1. The group maxima (independent chains), then the thread's maximum.
  float group_max[kGroups];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const float* u = v + kGroup * g;
    group_max[g] = fmaxf(fmaxf(fmaxf(u[0], u[1]), fmaxf(u[2], u[3])), fmaxf(fmaxf(u[4], u[5]), fmaxf(u[6], u[7])));
  }
  float m = group_max[0];
#pragma unroll
  for (int g = 1; g < kGroups; ++g) m = fmaxf(m, group_max[g]);
  const bool holds = slot_index<true>(begin, 0) < end;  // the thread has a logit of the chunk
  const uint32_t max_bits = holds ? ordered_bits(m) : 0u;

  // 2. The warp's floor.
  uint32_t warp_max;
  const uint32_t warp_floor = warp_jth_largest(max_bits, (k + kWarps - 1) / kWarps, warp_max);
  if (lane == 0) bs.warp_floors[warp] = warp_floor;

  // 3. The warp's (m, s), relative to its maximum `top`: each term 2^(x log2 e - c) by one fma,
  // c = top log2 e rounded; the sum times 2^-r, r = top log2 e - c (exact), is the sum of
  // 2^((x - top) log2 e).
  if (job.with_stats) {
    const float top = warp_max == 0 ? -INFINITY : from_ordered_bits(warp_max);
    float sum = 0.0f;
    float c = 0.0f;
    if (top != -INFINITY) {
      c = top * kLog2e;
      float sums[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // four chains of adds, in a fixed order
#pragma unroll
      for (int j = 0; j < kSlots; ++j) sums[j % 4] += fast_exp2(fmaf(v[j], kLog2e, -c));  // -inf past the end: 0
      sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFull, sum, o);
    if (lane == 0) {
      if (top != -INFINITY) sum *= fast_exp2(-fmaf(top, kLog2e, -c));
      bs.warp_pairs[warp] = make_float2(top, sum);
    }
  }
  __syncthreads();

  // The block's floor from the warps' floors.
  const uint32_t floor_bits = block_floor(max_bits, k, bs);
  const float floor_x = floor_value(floor_bits);

  // 4. The survivors' keys into the block's slice, a group at a time. The slots past the
  // chunk's end hold -inf: only a floor of -inf (every logit) needs the index checked.
  if (holds && m >= floor_x) {
    if (floor_x != -INFINITY) {
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        if (group_max[g] >= floor_x) {
#pragma unroll
          for (int j = kGroup * g; j < kGroup * (g + 1); ++j) {
            if (v[j] >= floor_x) publish_survivor(v[j], slot_index<true>(begin, j), slice, per, bs);
          }
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        if (slot_index<true>(begin, j) < end) publish_survivor(v[j], slot_index<true>(begin, j), slice, per, bs);
      }
    }
  }

  // 5. The header and the pair published; the row's counter; the row's last chunk's block
  // waits for the others and selects.
  finish_chunk<true>(b, s, slice, floor_bits, job, bs);
}

// grid (splits, B), 256 threads: block (s, b) takes chunk s of row b.
template <int kSlots>
__global__ void __launch_bounds__(kThreads, kDeepBlocks<kSlots>) deep_chunk_kernel(Job job) {
  __shared__ BlockShared bs;
  const int s = blockIdx.x, b = blockIdx.y;
  float v[kSlots];
  load_chunk<kSlots, true>(job.row(b), job.begin(s), job.end(s), v);
  deep_chunk_step<kSlots>(v, b, s, job, bs);
}

// --- the launch ----------------------------------------------------------------------------

// Which kernel serves the shape. kForced: the deep kernel wherever it can run (the forms
// that test it on every shape class and measure it beside the routed one).
enum class Route { kDeep, kCluster, kWarpFloor };

template <int kSlots, bool kForced>
Route route(const float* x, int B, int V) {
  constexpr int kChunk = kThreads * kSlots;
  static const int sms = wb::sm_count();  // the first GPU used
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t splits = (int64_t(V) + kChunk - 1) / kChunk;
  if (!vector || splits > kMaxSplits7) return Route::kWarpFloor;
  if (kForced) return Route::kDeep;
  // v6 while its cluster of 16 blocks a row gives every block of the batch an SM.
  return V <= 131072 && int64_t(B) * 16 <= sms ? Route::kCluster : Route::kDeep;
}

template <int kSlots>
void launch(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            void* workspace, cudaStream_t stream) {
  constexpr int kChunk = kThreads * kSlots;
  const int splits = int((int64_t(V) + kChunk - 1) / kChunk);
  launch_split_row(x, probs, B, V, splits, probabilities, true, workspace, stream,
                   [&](dim3 grid, int chunk, bool with_stats, const Workspace& ws) {
                     const Job job{x,      values,        indices,    V, k, chunk, kRowKeys / splits,
                                   splits, probabilities, with_stats, ws};
                     deep_chunk_kernel<kSlots><<<grid, kThreads, 0, stream>>>(job);
                   });
}

// The three forms of kSlots logits a thread, each routed as route() says.
template <int kSlots, bool kForced>
void topk_deep(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
               cudaStream_t stream) {
  require_valid(B, V, k);
  switch (route<kSlots, kForced>(x, B, V)) {
    case Route::kDeep:
      return launch<kSlots>(x, nullptr, values, indices, B, V, k, false, workspace, stream);
    case Route::kCluster:
      return topk_cluster(x, values, indices, B, V, k, workspace, stream);
    case Route::kWarpFloor:
      return topk_warp_floor(x, values, indices, B, V, k, workspace, stream);
  }
}

template <int kSlots, bool kForced>
void softmax_topk_deep(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                       cudaStream_t stream) {
  require_valid(B, V, k);
  switch (route<kSlots, kForced>(x, B, V)) {
    case Route::kDeep:
      return launch<kSlots>(x, nullptr, values, indices, B, V, k, true, workspace, stream);
    case Route::kCluster:
      return softmax_topk_cluster(x, values, indices, B, V, k, workspace, stream);
    case Route::kWarpFloor:
      return softmax_topk_warp_floor(x, values, indices, B, V, k, workspace, stream);
  }
}

template <int kSlots, bool kForced>
void softmax_topk_probs_deep(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                             void* workspace, cudaStream_t stream) {
  require_valid(B, V, k);
  switch (route<kSlots, kForced>(x, B, V)) {
    case Route::kDeep:
      return launch<kSlots>(x, probs, values, indices, B, V, k, true, workspace, stream);
    case Route::kCluster:
      return softmax_topk_probs_cluster(x, probs, values, indices, B, V, k, workspace, stream);
    case Route::kWarpFloor:
      return softmax_topk_probs_warp_floor(x, probs, values, indices, B, V, k, workspace, stream);
  }
}

}  // namespace

void topk_deep_chunk(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                     cudaStream_t stream) {
  topk_deep<64, false>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_deep_chunk(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                             cudaStream_t stream) {
  softmax_topk_deep<64, false>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_probs_deep_chunk(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                   void* workspace, cudaStream_t stream) {
  softmax_topk_probs_deep<64, false>(x, probs, values, indices, B, V, k, workspace, stream);
}

// The deep kernel on every shape it can run (no batch routed to v6): the tests' every shape
// class meets it.
void topk_deep_chunk_forced(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                            cudaStream_t stream) {
  topk_deep<64, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_deep_chunk_forced(const float* x, float* values, int32_t* indices, int B, int V, int k,
                                    void* workspace, cudaStream_t stream) {
  softmax_topk_deep<64, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_probs_deep_chunk_forced(const float* x, float* probs, float* values, int32_t* indices, int B, int V,
                                          int k, void* workspace, cudaStream_t stream) {
  softmax_topk_probs_deep<64, true>(x, probs, values, indices, B, V, k, workspace, stream);
}

// The same with 48 logits a thread (3 blocks an SM), forced, measured beside it.
void topk_deep_chunk48(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                       cudaStream_t stream) {
  topk_deep<48, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_deep_chunk48(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                               cudaStream_t stream) {
  softmax_topk_deep<48, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_probs_deep_chunk48(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                     void* workspace, cudaStream_t stream) {
  softmax_topk_probs_deep<48, true>(x, probs, values, indices, B, V, k, workspace, stream);
}

}  // namespace ch07::solution
