// What the warp-floor steps (v7_warp_floor, v8_deep_chunk) share: a block keeps every logit of
// its chunk that reaches a floor found by a few warp votes and publishes their keys; the last
// block of the row does the one exact select over what the blocks published (v7_warp_floor.cu's
// header explains the plan). The steps differ in how a block holds its chunk and scans it.
//
//   warp_jth_largest     a warp's floor: the j-th largest of its 32 thread maxima
//   start_chunk, block_floor, publish_survivor, finish_chunk
//                        a block's steps around its own scan of the chunk: the block's floor
//                        from the warps' floors, a survivor's key into the block's slice, the
//                        slice's header and pair, the row's counter (v7: every block asks it
//                        whether it is the last; v8: the last chunk's block waits for it), the
//                        last block's select
//   last_block_select    the row's top k from the published keys
#pragma once
#include <cstdint>

#include "radix_select.cuh"
#include "row_topk.cuh"
#include "split_common.cuh"

namespace ch07::solution {
namespace {  // internal to each step's file, like its kernels

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

// --- a block's steps around its scan -------------------------------------------------------

// Before a chunk: the block's survivor count and the warp-floor counts start at 0.
__device__ __forceinline__ void start_chunk(BlockShared& bs) {
  if (threadIdx.x == 0) bs.published = 0;
  if (threadIdx.x < kWarps) bs.reach[threadIdx.x] = 0;
}

// After the barrier that follows the warps' floors (bs.warp_floors): the block's floor, as
// ordered bits, the highest warp floor that k of the block's maxima reach (the lowest always
// does: eight warps x j maxima reach it). `max_bits`: the thread's maximum (0: no logit).
// Has one barrier.
__device__ __forceinline__ uint32_t block_floor(const uint32_t& max_bits, int k, BlockShared& bs) {
  const int lane = threadIdx.x & 31;
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
  return floor_bits;
}

// The floor as a float: -inf lets every logit of the chunk through (floor 0: fewer than k
// maxima).
__device__ __forceinline__ float floor_value(const uint32_t& floor_bits) {
  return floor_bits <= ordered_bits(-INFINITY) ? -INFINITY : from_ordered_bits(floor_bits);
}

// A survivor's key into the block's slice (`slice[0]` is the header; `per` keys in all): a
// shared counter gives the slot, and a slot past the slice only counts (finish_chunk sees it).
__device__ __forceinline__ void publish_survivor(float x, int index, Key* slice, int per, BlockShared& bs) {
  const int slot = atomicAdd(&bs.published, 1);
  if (slot < per - 1) slice[1 + slot] = make_key(x, index);
}

// The slice's header (its count and the block's floor) and the block's pair (the warps' pairs
// in bs.warp_pairs, merged in order); thread 0 alone.
__device__ __forceinline__ void publish_header(int b, int s, Key* slice, int count, uint32_t floor_bits, const Job& job,
                                               const BlockShared& bs) {
  slice[0] = slice_header(count, floor_bits);
  if (job.with_stats) {
    Stats pair{bs.warp_pairs[0].x, bs.warp_pairs[0].y};
#pragma unroll
    for (int w = 1; w < kWarps; ++w) pair = merge(pair, Stats{bs.warp_pairs[w].x, bs.warp_pairs[w].y});
    job.ws.stats[size_t(b) * kMaxSplits + s] = make_float2(pair.m, pair.s);
  }
}

// The row's counter by a release reduction: the block's writes (ordered before thread 0's by
// the barrier before it) are visible to whoever acquires the count; no value comes back, so
// nothing waits for the round trip.
__device__ __forceinline__ void count_in_release(unsigned* counter) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* counter) {
  unsigned n;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(n) : "l"(counter) : "memory");
  return n;
}

// After the survivors of chunk s of row b are published into `slice` (its slice): the exact
// select over the chunk read again if they overflowed the slice, the header and the block's
// pair published, the row's counter, and the row's select by its last block. Called by the
// whole block.
//
// kDesignated false (v7): every block adds itself to the counter with an atomic and waits for
// the count to come back; the one that sees splits - 1 is the last. kDesignated true (v8): the
// row's last block is its last chunk's (s = splits - 1, the row's last block to be
// dispatched); every other block counts itself in with a release reduction and exits at
// once, and the designated block waits (polling with an acquire load) until the other
// splits - 1 have. Waiting for blocks dispatched before it relies on the GPU dispatching
// blocks in the order of their index, as single-pass scans with a look-back do.
template <bool kDesignated = false>
__device__ __forceinline__ void finish_chunk(int b, int s, Key* slice, uint32_t floor_bits, const Job& job,
                                             BlockShared& bs) {
  const int k = job.k, per = job.per;
  const int begin = job.begin(s), end = job.end(s);

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

  // The header and the pair published; the last block of the row goes on. One fence, by
  // thread 0 after the barrier, orders the whole block's writes before the count (the barrier
  // has ordered them before thread 0's fence), as a grid-wide barrier does; and one after the
  // count, in the last block, orders the other blocks' writes before its reads.
  const bool designated = kDesignated && s == job.splits - 1;
  if (threadIdx.x == 0) {
    publish_header(b, s, slice, count, floor_bits, job, bs);
    if constexpr (kDesignated) {
      if (!designated) {
        count_in_release(&job.ws.counters[b]);
      } else {
        while (load_acquire(&job.ws.counters[b]) != unsigned(job.splits - 1)) __nanosleep(64);
        __threadfence();  // every other block's slice is visible from here on
      }
    } else {
      __threadfence();
      const bool last = atomicAdd(&job.ws.counters[b], 1u) == unsigned(job.splits - 1);
      if (last) __threadfence();  // every other block's slice is visible from here on
      bs.last = last;
    }
  }
  if constexpr (kDesignated) {
    if (!designated) return;  // the same on every thread
    __syncthreads();
    last_block_select(b, job, bs);
  } else {
    __syncthreads();
    if (bs.last) last_block_select(b, job, bs);
  }
}

}  // namespace
}  // namespace ch07::solution
