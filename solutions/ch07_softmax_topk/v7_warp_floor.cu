// v7 — a floor from the warps' votes: each block keeps every logit above a cheap floor, and the
// last block of the row does the one exact select.
//
// Over v5: at 64 x 128,256 (k 50) v5 reads the logits at about a fifth of the copy bandwidth.
// Its 1,024 blocks each load 32 logits a thread and then, with no load in flight, run a serial
// select: the (m, s) pair through a block-wide merge, every logit turned into its ordered bits,
// the range of the 256 thread maxima, a 2,048-bin radix pass over them, the ~55 survivors
// gathered and ranked, the k keys published. About 1,900 instructions a warp for 1,024
// logits, with four blocks an SM: the SM spends most of the block's life selecting, and the
// DRAM waits. v7 moves the exact work to the one block per row that has to do it anyway (the
// last) and leaves the other blocks a floor that costs a few warp votes:
//
//   1. Load, as v5: a block of 256 threads holds 256 x 32 logits in registers (float4
//      streaming loads, all in flight at once). Each thread's maximum, a float max per logit.
//   2. A floor per warp: the j-th largest of the warp's 32 thread maxima, j = ceil(k / 8), by
//      j rounds of a warp max-reduction (redux) and a ballot of the lanes that hold it. Eight
//      warps x j maxima >= k logits reach the lowest of the eight warp floors, so the block's
//      k largest do. The block's floor is the highest warp floor that k of its maxima reach
//      (one ballot per warp floor, the counts added in shared memory, one more barrier): in a
//      simulation of rows drawn from normal(0, 2), about 60 logits of 8,192 reach it, against
//      about 55 for v5's floor and about 100 for the lowest warp floor (measured on an H200,
//      the lowest warp floor alone was 0.8 to 3 us slower at every benchmark shape).
//   3. The (m, s) pair per warp, relative to the warp's maximum (the first redux of 2 gave
//      it): one exp per logit on the MUFU unit, a shuffle sum, no rescaling. Thread 0 merges
//      the eight warps' pairs when it publishes.
//   4. Survivors: a thread whose maximum reaches the floor appends its logits that reach it
//      (their keys) straight to the block's slice of the workspace (a shared counter gives
//      the slot). No ranking here: the block publishes the count, its floor and the keys.
//      A slice holds 8,192 / splits keys (512 at 16 blocks a row); a block with more survivors
//      (thousands of equal logits) runs v5's exact select over its chunk read again and
//      publishes its k best instead: slow, correct, rare.
//   5. Publish: thread 0 writes the header and the block's (m, s), then ONE fence and the
//      row's counter (v5: every thread fences before the barrier; the barrier already orders
//      the block's writes before thread 0's fence, as in a grid-wide barrier).
//   6. The last block of the row (v5's counter): the row's floor is the highest block floor
//      (at least k logits of the row reach each one), the published keys that reach it
//      (a few hundred to a thousand) are gathered into shared memory in one pass over L2,
//      and v5's radix select takes their top k, ranked. If more than kCandCap reach it, the
//      same select runs over the published keys in L2 instead.
//
//   per block:  256 threads x 32 logits (8,192) in registers, read once
//   per row:    splits = ceil(V / 8,192) blocks (16 at V = 128,256; 32 at 262,144), at most 64
//   B = 64, V = 128,256:  1,024 blocks of ~8,016 logits
//
// The work per block is a load, a max and (softmax forms) an exp per logit, j + 8 warp votes,
// three barriers, and the survivors' keys written (Nsight Compute, 256 x 128,256: about 920
// instructions a warp on average, the last blocks' selects included; v5: about 1,900).
//
// What it does not serve goes to v5 (same arguments): rows that do not allow float4 loads
// (V % 4 != 0 or an unaligned x) and rows longer than 64 x 8,192 = 524,288 logits (a block's
// slice of the workspace would fall below 128 keys).
//
// From radix_select.cuh: the chunk's load, the keys in shared memory, the select and its
// ranking, v5's exact path over a chunk in memory, the result's write. From split_common.cuh:
// the workspace, the row's counter and its reset, the launch with the probabilities pass.
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v5_radix_select,v7_warp_floor
#include <cstdint>

#include "ladder.cuh"
#include "radix_select.cuh"
#include "row_topk.cuh"
#include "runtime/errors.cuh"
#include "split_common.cuh"
#include "warp_floor.cuh"

namespace ch07::solution {
namespace {

constexpr int kSlots = 32;                 // logits a thread
constexpr int kChunk = kThreads * kSlots;  // logits a block, at most

// Chunk s of row b, already in registers (v, -inf past its end): steps 1 (the maxima) to 5, and
// the row's select if this block is the row's last. Called by the whole block.
__device__ __forceinline__ void chunk_step(const float (&v)[kSlots], int b, int s, const Job& job, BlockShared& bs) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int k = job.k, per = job.per;
  const int begin = job.begin(s), end = job.end(s);
  Key* const row_keys = job.ws.keys + size_t(b) * kRowKeys;
  Key* const slice = row_keys + size_t(s) * per;  // [0]: the header, then the keys

  start_chunk(bs);

  // 1. Each thread's maximum (four chains, not one of 32).
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

  // 3. The warp's (m, s), relative to its maximum.
  if (job.with_stats) {
    const float top = warp_max == 0 ? -INFINITY : from_ordered_bits(warp_max);
    float sum = 0.0f;
    if (top != -INFINITY) {
      float sums[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // four chains of adds, in a fixed order
#pragma unroll
      for (int j = 0; j < kSlots; ++j) sums[j % 4] += fast_exp2((v[j] - top) * kLog2e);  // -inf past the end: 0
      sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFull, sum, o);
    if (lane == 0) bs.warp_pairs[warp] = make_float2(top, sum);
  }
  __syncthreads();

  // The block's floor from the warps' floors.
  const uint32_t floor_bits = block_floor(max_bits, k, bs);
  const float floor_x = floor_value(floor_bits);

  // 4. The survivors' keys into the block's slice. The slots past the chunk's end hold -inf:
  // only a floor of -inf (every logit) needs the index checked.
  const auto keep = [&](int j) {
    const int slot = atomicAdd(&bs.published, 1);
    if (slot < per - 1) slice[1 + slot] = make_key(v[j], slot_index<true>(begin, j));
  };
  if (holds && m >= floor_x) {
    if (floor_x != -INFINITY) {
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        if (v[j] >= floor_x) keep(j);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        if (slot_index<true>(begin, j) < end) keep(j);
      }
    }
  }

  // 5. The header and the pair published; the last block of the row goes on.
  finish_chunk(b, s, slice, floor_bits, job, bs);
}

// grid (splits, B), 256 threads: block (s, b) takes chunk s of row b.
__global__ void __launch_bounds__(kThreads, kMinBlocks) warp_floor_kernel(Job job) {
  __shared__ BlockShared bs;
  const int s = blockIdx.x, b = blockIdx.y;
  float v[kSlots];
  load_chunk<kSlots, true>(job.row(b), job.begin(s), job.end(s), v);
  chunk_step(v, b, s, job, bs);
}

// --- the launch ----------------------------------------------------------------------------

// Launches v7 for the shapes it serves; false (nothing launched) for the others.
bool launch(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            void* workspace, cudaStream_t stream) {
  require_valid(B, V, k);
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t splits = (int64_t(V) + kChunk - 1) / kChunk;
  if (!vector || splits > kMaxSplits7) return false;
  launch_split_row(x, probs, B, V, int(splits), probabilities, true, workspace, stream,
                   [&](dim3 grid, int chunk, bool with_stats, const Workspace& ws) {
                     const Job job{x,           values,        indices,    V, k, chunk, kRowKeys / int(splits),
                                   int(splits), probabilities, with_stats, ws};
                     warp_floor_kernel<<<grid, kThreads, 0, stream>>>(job);
                   });
  return true;
}

}  // namespace

void topk_warp_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                     cudaStream_t stream) {
  if (!launch(x, nullptr, values, indices, B, V, k, false, workspace, stream)) {
    topk_radix(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_warp_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                             cudaStream_t stream) {
  if (!launch(x, nullptr, values, indices, B, V, k, true, workspace, stream)) {
    softmax_topk_radix(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_probs_warp_floor(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                   void* workspace, cudaStream_t stream) {
  if (!launch(x, probs, values, indices, B, V, k, true, workspace, stream)) {
    softmax_topk_probs_radix(x, probs, values, indices, B, V, k, workspace, stream);
  }
}

}  // namespace ch07::solution
