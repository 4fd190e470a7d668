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

namespace ch07::solution {
namespace {

constexpr int kSlots = 32;                    // logits a thread
constexpr int kChunk = kThreads * kSlots;     // logits a block, at most
constexpr int kMaxSplits7 = 64;               // blocks a row: a slice of >= 128 keys
constexpr int kRowKeys = kMaxSplits * kMaxK;  // a row's keys in the workspace (8,192)
constexpr int kCandCap = 4096;                // the last block's candidates in shared memory (32 KB)
static_assert(kRowKeys / kMaxSplits7 - 1 >= kMaxK, "a slice holds a block's k best");
static_assert(kMaxSplits7 <= 2 * 32, "warp 0's lanes read two slices' headers each");

// The last block's shared state: the candidates and where each block's slice starts in the
// list of all published keys.
struct TailShared {
  Key cand[kCandCap];
  int first[kMaxSplits7 + 1];  // first[p]: the published keys before block p's (first[splits]: all)
  uint32_t row_floor;
  int cand_count;
};

// A slice's header (its first key slot): the count of keys that follow, and the block's floor.
__device__ __forceinline__ Key slice_header(int count, uint32_t floor_bits) {
  return (Key(uint32_t(count)) << 32) | Key(floor_bits);
}

// The j-th largest of the warp's thread maxima (ordered bits, 0 for a thread with no logit),
// with ties counted: j rounds of a max over the lanes still in, each taking out the lanes that
// hold it. 0 when the warp holds fewer than j maxima. `warp_max` gets the first round's.
__device__ __forceinline__ uint32_t warp_jth_largest(uint32_t bits, int j, uint32_t& warp_max) {
  uint32_t in = bits;
  uint32_t top = __reduce_max_sync(kFull, in);
  warp_max = top;
  for (;;) {  // warp-uniform
    if (top == 0) return 0;
    j -= __popc(__ballot_sync(kFull, in == top));
    if (j <= 0) return top;
    if (in == top) in = 0;
    top = __reduce_max_sync(kFull, in);
  }
}

// The published keys of a row: block p's keys in its slice, first[p + 1] - first[p] of them,
// one list of first[splits] keys in all; only those >= floor (as keys) are handed on, kNoKey in
// place of the others. The last block reads them once into shared memory (or, for the rare row
// with more than kCandCap candidates, selects from them in L2).
struct PublishedSurvivors {
  const Key* row_keys;
  const int* first;  // TailShared::first
  int splits, per;
  Key floor;

  __device__ __forceinline__ Key key(int i) const {
    int lo = 0, hi = splits - 1;  // the block p with first[p] <= i < first[p + 1]
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first[mid] <= i) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return __ldcg(row_keys + size_t(lo) * per + 1 + (i - first[lo]));
  }

  template <class F>
  __device__ __forceinline__ void for_each(F f) const {
    for_each_loaded(
        first[splits], [&](int i) { return key(i); }, [&](Key k) { f(is_real(k) && k >= floor ? k : kNoKey); });
  }
};

// What every launch of v7 shares: the logits, the outputs, the row's split and the forms.
struct Job {
  const float* x;
  float* values;
  int32_t* indices;
  int V, k, chunk, per, splits;  // chunk s of a row: [s * chunk, min(V, (s + 1) * chunk)); its slice: per keys
  bool probabilities, with_stats;
  Workspace ws;

  __device__ __forceinline__ int end(int s) const { return min(V, begin(s) + chunk); }

  __device__ __forceinline__ int begin(int s) const { return min(V, s * chunk); }
  __device__ __forceinline__ const float* row(int b) const { return x + size_t(b) * V; }
};

// A block's shared memory.
struct BlockShared {
  SelectShared sh;
  TailShared tail;
  float2 stats_area[kWarps];  // block_stats' (as Stats: plain storage, no initializer in shared memory)
  float2 warp_pairs[kWarps];  // each warp's (m, s)
  uint32_t warp_floors[kWarps];
  int reach[kWarps];  // the block's maxima that reach warp floor w
  int published;
  bool last;
};

// The row's top k, by its last block: the row floor is the highest block floor (at least k
// logits of the row reach each), the published keys that reach it are gathered into shared
// memory in one pass over L2, and v5's radix select takes their k best.
__device__ __forceinline__ void last_block_select(int b, const Job& job, BlockShared& bs) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int k = job.k, per = job.per, splits = job.splits;
  const Key* const row_keys = job.ws.keys + size_t(b) * kRowKeys;
  TailShared& tail = bs.tail;

  // The headers: warp 0's lane l reads blocks 2l and 2l + 1; first[] is the running count of
  // the published keys.
  if (warp == 0) {
    int n[2] = {0, 0};
    uint32_t f = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = 2 * lane + h;
      if (p < splits) {
        const Key header = __ldcg(row_keys + size_t(p) * per);
        n[h] = int(header >> 32);
        f = max(f, uint32_t(header));
      }
    }
    int inclusive = n[0] + n[1];
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int t = __shfl_up_sync(kFull, inclusive, o);
      if (lane >= o) inclusive += t;
    }
    const int before = inclusive - n[0] - n[1];
    if (2 * lane < splits) tail.first[2 * lane] = before;
    if (2 * lane + 1 < splits) tail.first[2 * lane + 1] = before + n[0];
    if (lane == 31) tail.first[splits] = inclusive;
    f = __reduce_max_sync(kFull, f);
    if (lane == 0) tail.row_floor = f, tail.cand_count = 0;
  }
  __syncthreads();

  // The candidates: the published keys that reach the row floor, into shared memory.
  const PublishedSurvivors published{row_keys, tail.first, splits, per, Key(tail.row_floor) << 32};
  published.for_each([&](Key key) {
    if (key != kNoKey) {
      const int at = atomicAdd(&tail.cand_count, 1);
      if (at < kCandCap) tail.cand[at] = key;
    }
  });
  __syncthreads();
  const int candidates = tail.cand_count;
  if (candidates <= kCandCap) {
    const SharedKeys in_shared{tail.cand, candidates};
    select_top_k(in_shared, key_range(in_shared, bs.sh), k, bs.sh);
  } else {
    select_top_k(published, key_range(published, bs.sh), k, bs.sh);
  }

  Stats all;
  if (job.with_stats) {
    Stats part;
    for (int p = threadIdx.x; p < splits; p += kThreads) {
      const float2 q = __ldcg(job.ws.stats + size_t(b) * kMaxSplits + p);
      part = merge(part, Stats{q.x, q.y});
    }
    all = block_stats<kWarps>(part, reinterpret_cast<Stats*>(bs.stats_area));
  }
  if (warp == 0) {
    write_result(bs.sh, job.row(b), job.values + size_t(b) * k, job.indices + size_t(b) * k, k, job.probabilities, all);
  }
  finish_row(job.ws, b, job.with_stats, all);
}

// Chunk s of row b, already in registers (v, -inf past its end): steps 1 (the maxima) to 5, and
// the row's select if this block is the row's last. Called by the whole block.
__device__ __forceinline__ void chunk_step(const float (&v)[kSlots], int b, int s, const Job& job, BlockShared& bs) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int k = job.k, per = job.per;
  const int begin = job.begin(s), end = job.end(s);
  Key* const row_keys = job.ws.keys + size_t(b) * kRowKeys;
  Key* const slice = row_keys + size_t(s) * per;  // [0]: the header, then the keys

  if (threadIdx.x == 0) bs.published = 0;
  if (threadIdx.x < kWarps) bs.reach[threadIdx.x] = 0;

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

  // The block's floor: the highest warp floor that k of the block's maxima reach (the lowest
  // always does: eight warps x j maxima reach it).
  uint32_t floors[kWarps];
  uint32_t floor_bits = ~0u;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) floors[w] = bs.warp_floors[w], floor_bits = min(floor_bits, floors[w]);
  int mine = 0;  // lane w: this warp's maxima that reach warp floor w
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int n = __popc(__ballot_sync(kFull, max_bits != 0 && max_bits >= floors[w]));
    if (lane == w) mine = n;
  }
  if (lane < kWarps) atomicAdd(&bs.reach[lane], mine);
  __syncthreads();
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    if (floors[w] > floor_bits && bs.reach[w] >= k) floor_bits = floors[w];
  }
  // As a float: -inf lets every logit of the chunk through (floor 0: fewer than k maxima).
  const float floor_x = floor_bits <= ordered_bits(-INFINITY) ? -INFINITY : from_ordered_bits(floor_bits);

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
  __syncthreads();  // the keys are written (thread 0's fence below makes them visible to the row)
  int count = bs.published;
  if (count > per - 1) {  // the same on every thread: v5's exact select over the chunk in memory
    const ChunkInMemory again{job.row(b), begin, end};
    select_top_k(again, key_range(again, bs.sh), k, bs.sh);
    for (int i = threadIdx.x; i < k; i += kThreads) slice[1 + i] = bs.sh.top[i];
    count = k;
    floor_bits = is_real(bs.sh.top[k - 1]) ? uint32_t(bs.sh.top[k - 1] >> 32) : 0u;
    __syncthreads();
  }

  // 5. The header and the pair published; the last block of the row goes on. One fence, by
  // thread 0 after the barrier, orders the whole block's writes before the count (the barrier
  // has ordered them before thread 0's fence), as a grid-wide barrier does; and one after the
  // count, in the last block, orders the other blocks' writes before its reads.
  if (threadIdx.x == 0) {
    slice[0] = slice_header(count, floor_bits);
    if (job.with_stats) {
      Stats pair{bs.warp_pairs[0].x, bs.warp_pairs[0].y};
#pragma unroll
      for (int w = 1; w < kWarps; ++w) pair = merge(pair, Stats{bs.warp_pairs[w].x, bs.warp_pairs[w].y});
      job.ws.stats[size_t(b) * kMaxSplits + s] = make_float2(pair.m, pair.s);
    }
    __threadfence();
    const bool last = atomicAdd(&job.ws.counters[b], 1u) == unsigned(job.splits - 1);
    if (last) __threadfence();  // every other block's slice is visible from here on
    bs.last = last;
  }
  __syncthreads();
  if (bs.last) last_block_select(b, job, bs);
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
