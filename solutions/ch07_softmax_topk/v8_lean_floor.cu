// v8 — v7 made lean: the same plan, fewer instructions a logit and no round trip per block.
//
// Over v7: at 256 x 128,256 (k 50) v7 runs at about half of the copy bandwidth, and Nsight
// Compute says the SM, not the DRAM, is the limit: about 920 instructions a warp for 1,024
// logits with the issue slots 58 % busy, and the largest stall a barrier. Holding more logits
// a thread to pay a block's fixed work less often does not help: measured on an H200, 64
// logits a thread (2 blocks an SM) cut the instructions by 30 % and ran 18 % slower (issue
// slots 34 % busy with 16 warps an SM), 48 (3 blocks an SM) ran as v7 does. So v8 keeps v7's
// block (256 threads x 32 logits, 4 blocks an SM) and takes work out of it:
//
//   1. Whole chunks, loaded without checks. v7 cuts a row into equal chunks (16 of 8,016 logits
//      at V = 128,256), so every block's last float4s fall past its end and every load carries
//      a bounds check, its own address and four -inf moves. v8 cuts the row into chunks of
//      exactly 256 x 32 logits and gives the remainder to the last (15 whole chunks and one of
//      5,376 at V = 128,256): a whole chunk's 8 loads are one base address and 8 immediate
//      offsets; only the last chunk goes through v7's checked load.
//   2. One instruction fewer per exp: v7 computes exp2((x - top) * log2 e), a subtraction and
//      a product. Here it is exp2(fma(x, log2 e, -c)) with c = top * log2 e rounded, one fused
//      multiply-add; the rounding of c (its residue r = top * log2 e - c, exact by one more
//      fma) multiplies every term of the warp by 2^r, so the warp's sum is multiplied by 2^-r
//      once. The exponent is rounded once, where v7 rounds it twice.
//   3. The survivors' scan by groups of 8 logits: a thread whose maximum reaches the floor (one
//      or two a warp, and the warp runs the scan with it) takes the maximum of each group and
//      compares the 8 logits of the rare group that reaches the floor, where v7 branched on
//      every logit.
//   4. No round trip to learn who is last. In v7 every block's thread 0 adds to the row's
//      counter with an atomic and the whole block waits for the old count to come back (the
//      fence, then a round trip to L2) before it may exit or select. Here the row's last chunk
//      (s = splits - 1, the row's last block to be dispatched) is the one that selects: every
//      other block counts itself in with a release reduction (red.release: no value comes
//      back) and exits at once; the designated block publishes its own survivors, then polls
//      the counter with an acquire load until the other splits - 1 blocks are in. Blocks are
//      dispatched in the order of their index (single-pass scans with a look-back rely on the
//      same), so those it waits for are running or done. The last chunk is also the short
//      one, so the designated block is the first of its row to be ready.
//
//   per block:  256 threads x 32 logits (8,192) in registers, read once
//   per row:    splits = ceil(V / 8,192) blocks (16 at V = 128,256; 32 at 262,144), at most 64
//   B = 256, V = 128,256:  4,096 blocks, 15 of 8,192 logits and one of 5,376 a row
//
// The rest is v7's (warp_floor.cuh): the warp floor, the block's floor, the survivors' keys in
// the block's slice of the workspace, the exact select over the chunk read again for a block
// with too many survivors, the last block's select over the published keys.
//
// What it does not serve: the batches v6 serves (a cluster of 16 blocks a row while every block
// of the batch has an SM: B <= 8 at rows of at most 131,072 logits on 132 SMs) go to v6; rows
// without float4 loads and rows over 64 x 8,192 logits go to v7 (which sends them to v5).
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v7_warp_floor,v8_lean_floor
#include <cstdint>

#include "ladder.cuh"
#include "radix_select.cuh"
#include "row_topk.cuh"
#include "runtime/errors.cuh"
#include "split_common.cuh"
#include "warp_floor.cuh"

namespace ch07::solution {
namespace {

constexpr int kGroup = 8;  // logits the survivors' scan asks about at once: two float4s

// Blocks an SM for kSlots logits a thread: 32 -> 4 (64 registers, v7's), 48 -> 3 (80).
template <int kSlots>
constexpr int kLeanBlocks = kSlots > 32 ? 3 : 4;

// A whole chunk (256 x kSlots logits from `begin`) into registers: one base address, the
// float4s at immediate offsets from it, no checks.
template <int kSlots>
__device__ __forceinline__ void load_whole_chunk(const float* __restrict__ row, int begin, float (&v)[kSlots]) {
  const float* base = row + begin + 4 * threadIdx.x;  // slot_index<true>(begin, 0)
#pragma unroll
  for (int g = 0; g < kSlots / 4; ++g) {
    const float4 q = load_stream(base + 4 * kThreads * g);
    v[4 * g] = q.x, v[4 * g + 1] = q.y, v[4 * g + 2] = q.z, v[4 * g + 3] = q.w;
  }
}

// Chunk s of row b, already in registers (v, -inf past its end): v7's steps with the exp by
// one fma and the survivors' scan by groups; the row's last chunk's block selects. Called by
// the whole block.
template <int kSlots>
__device__ __forceinline__ void lean_chunk_step(const float (&v)[kSlots], int b, int s, const Job& job,
                                                BlockShared& bs) {
  static_assert(kSlots % kGroup == 0, "whole groups");
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int k = job.k, per = job.per;
  const int begin = job.begin(s), end = job.end(s);
  Key* const slice = job.ws.keys + size_t(b) * kRowKeys + size_t(s) * per;  // [0]: the header, then the keys

  start_chunk(bs);

  // 1. Each thread's maximum (four chains).
  float part[4] = {v[0], v[1], v[2], v[3]};
#pragma unroll
  for (int j = 4; j < kSlots; ++j) part[j % 4] = fmaxf(part[j % 4], v[j]);
  const float m = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
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
      for (int g = 0; g < kSlots / kGroup; ++g) {
        const float* u = v + kGroup * g;
        const float group_max =
            fmaxf(fmaxf(fmaxf(u[0], u[1]), fmaxf(u[2], u[3])), fmaxf(fmaxf(u[4], u[5]), fmaxf(u[6], u[7])));
        if (group_max >= floor_x) {
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

// grid (splits, B), 256 threads: block (s, b) takes chunk s of row b; every chunk but the
// row's last is whole.
template <int kSlots>
__global__ void __launch_bounds__(kThreads, kLeanBlocks<kSlots>) lean_floor_kernel(Job job) {
  __shared__ BlockShared bs;
  const int s = blockIdx.x, b = blockIdx.y;
  const int begin = job.begin(s), end = job.end(s);
  float v[kSlots];
  if (end - begin == kThreads * kSlots) {  // the same in the whole block
    load_whole_chunk<kSlots>(job.row(b), begin, v);
  } else {
    load_chunk<kSlots, true>(job.row(b), begin, end, v);
  }
  lean_chunk_step<kSlots>(v, b, s, job, bs);
}

// --- the launch ----------------------------------------------------------------------------

// Which kernel serves the shape. kForced: v8's kernel wherever it can run (the forms that test
// it on every shape class and measure it beside the routed one).
enum class Route { kLean, kCluster, kWarpFloor };

template <int kSlots, bool kForced>
Route route(const float* x, int B, int V) {
  constexpr int kChunk = kThreads * kSlots;
  static const int sms = wb::sm_count();  // the first GPU used
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t splits = (int64_t(V) + kChunk - 1) / kChunk;
  if (!vector || splits > kMaxSplits7) return Route::kWarpFloor;
  if (kForced) return Route::kLean;
  // v6 while its cluster of 16 blocks a row gives every block of the batch an SM.
  return V <= 131072 && int64_t(B) * 16 <= sms ? Route::kCluster : Route::kLean;
}

// Chunks of exactly 256 x kSlots logits, the remainder to the row's last.
template <int kSlots>
void launch(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            void* workspace, cudaStream_t stream) {
  constexpr int kChunk = kThreads * kSlots;
  const int splits = int((int64_t(V) + kChunk - 1) / kChunk);
  launch_split_row(x, probs, B, V, splits, probabilities, true, workspace, stream,
                   [&](dim3 grid, int, bool with_stats, const Workspace& ws) {
                     const Job job{x,      values,        indices,    V, k, kChunk, kRowKeys / splits,
                                   splits, probabilities, with_stats, ws};
                     lean_floor_kernel<kSlots><<<grid, kThreads, 0, stream>>>(job);
                   });
}

// The three forms of kSlots logits a thread, each routed as route() says.
template <int kSlots, bool kForced>
void topk_lean(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
               cudaStream_t stream) {
  require_valid(B, V, k);
  switch (route<kSlots, kForced>(x, B, V)) {
    case Route::kLean:
      return launch<kSlots>(x, nullptr, values, indices, B, V, k, false, workspace, stream);
    case Route::kCluster:
      return topk_cluster(x, values, indices, B, V, k, workspace, stream);
    case Route::kWarpFloor:
      return topk_warp_floor(x, values, indices, B, V, k, workspace, stream);
  }
}

template <int kSlots, bool kForced>
void softmax_topk_lean(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                       cudaStream_t stream) {
  require_valid(B, V, k);
  switch (route<kSlots, kForced>(x, B, V)) {
    case Route::kLean:
      return launch<kSlots>(x, nullptr, values, indices, B, V, k, true, workspace, stream);
    case Route::kCluster:
      return softmax_topk_cluster(x, values, indices, B, V, k, workspace, stream);
    case Route::kWarpFloor:
      return softmax_topk_warp_floor(x, values, indices, B, V, k, workspace, stream);
  }
}

template <int kSlots, bool kForced>
void softmax_topk_probs_lean(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                             void* workspace, cudaStream_t stream) {
  require_valid(B, V, k);
  switch (route<kSlots, kForced>(x, B, V)) {
    case Route::kLean:
      return launch<kSlots>(x, probs, values, indices, B, V, k, true, workspace, stream);
    case Route::kCluster:
      return softmax_topk_probs_cluster(x, probs, values, indices, B, V, k, workspace, stream);
    case Route::kWarpFloor:
      return softmax_topk_probs_warp_floor(x, probs, values, indices, B, V, k, workspace, stream);
  }
}

}  // namespace

void topk_lean_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                     cudaStream_t stream) {
  topk_lean<32, false>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_lean_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                             cudaStream_t stream) {
  softmax_topk_lean<32, false>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_probs_lean_floor(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                   void* workspace, cudaStream_t stream) {
  softmax_topk_probs_lean<32, false>(x, probs, values, indices, B, V, k, workspace, stream);
}

// v8's kernel on every shape it can run (no batch routed to v6): the tests' every shape class
// meets it.
void topk_lean_floor_forced(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                            cudaStream_t stream) {
  topk_lean<32, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_lean_floor_forced(const float* x, float* values, int32_t* indices, int B, int V, int k,
                                    void* workspace, cudaStream_t stream) {
  softmax_topk_lean<32, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_probs_lean_floor_forced(const float* x, float* probs, float* values, int32_t* indices, int B, int V,
                                          int k, void* workspace, cudaStream_t stream) {
  softmax_topk_probs_lean<32, true>(x, probs, values, indices, B, V, k, workspace, stream);
}

// The same kernel with 48 logits a thread (3 blocks an SM), forced, measured beside it.
void topk_lean_floor48(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                       cudaStream_t stream) {
  topk_lean<48, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_lean_floor48(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                               cudaStream_t stream) {
  softmax_topk_lean<48, true>(x, values, indices, B, V, k, workspace, stream);
}

void softmax_topk_probs_lean_floor48(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                     void* workspace, cudaStream_t stream) {
  softmax_topk_probs_lean<48, true>(x, probs, values, indices, B, V, k, workspace, stream);
}

}  // namespace ch07::solution
