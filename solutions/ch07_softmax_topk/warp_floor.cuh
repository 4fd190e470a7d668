// v7's block and its row's last block (v7_warp_floor.cu, whose header explains them), shared by
// the steps that run them: v7, and v8's form for batches whose clusters would share SMs, which
// adds the warps' maxima to what a block publishes and a cheaper select in the last block.
//
//   TailShared, BlockShared   the shared memory of a block and of the row's last block
//   warp_jth_largest          a warp's floor from j rounds of a redux
//   PublishedSurvivors, Job   the published keys of a row; what every launch shares
//   last_block_select         the row's top k by its last block
//   chunk_step                a block's work on its chunk in registers, then the last block's
//   launch_blocks             the launch of a row's blocks, the probabilities pass after it
#pragma once
#include <cstdint>

#include "radix_select.cuh"
#include "row_topk.cuh"
#include "split_common.cuh"

namespace ch07::solution {
namespace {  // internal to each step's file, like its kernels

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

// v8's form: where the blocks of row b publish their warps' maxima (maximum_key, place
// 8 s + w), when a row has at most 16 blocks: the unused upper half of the row's pair slots.
constexpr int kMaximaSplits = kMaxima / kWarps;  // 16
static_assert(kMaxSplits / 2 >= kMaxima / 2, "128 keys fit in the upper half of the pair slots");
__device__ __forceinline__ uint32_t* published_maxima(const Job& job, int b) {
  return reinterpret_cast<uint32_t*>(job.ws.stats + size_t(b) * kMaxSplits + kMaxSplits / 2);
}

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
//
// kMaxima_ (v8's form, rows of at most 16 blocks): the row floor is raised to the k-th largest of
// the row's 128 warp maxima where that is higher (k logits of the row reach it too, and every
// block published all its logits at or above its own floor, or its k best), which leaves about
// k + 13 candidates instead of several hundred; up to kRankCap of them are ranked by counting,
// with no radix pass.
template <bool kMaxima_ = false>
__device__ __forceinline__ void last_block_select(int b, const Job& job, BlockShared& bs) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int k = job.k, per = job.per, splits = job.splits;
  const Key* const row_keys = job.ws.keys + size_t(b) * kRowKeys;
  TailShared& tail = bs.tail;

  // kMaxima_: the maxima (threads 0..127) and the blocks' pairs (lanes 0..15 of warp 0) are
  // asked for before the headers, so that the three reads from L2 overlap.
  uint32_t max_key = 0;
  Stats pair;
  if constexpr (kMaxima_) {
    const int i = threadIdx.x, n = kWarps * splits;  // past n: the key of an empty warp, as unique as the others
    if (i < kMaxima) max_key = i < n ? __ldcg(published_maxima(job, b) + i) : maximum_key(0u, i);
    if (job.with_stats && i < splits) {
      const float2 q = __ldcg(job.ws.stats + size_t(b) * kMaxSplits + i);
      pair = Stats{q.x, q.y};
    }
  }

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
  if constexpr (kMaxima_) {  // the maxima into the candidates' room, which is free until the gather
    uint32_t* const maxima = reinterpret_cast<uint32_t*>(tail.cand);
    if (threadIdx.x < kMaxima) maxima[threadIdx.x] = max_key;
    __syncthreads();
    floor_of_maxima(maxima, k, bs.sh.hist, [&](uint32_t f) { tail.row_floor = max(tail.row_floor, f); });
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
  if constexpr (kMaxima_) {
    // The row's pair by warp 0 (the blocks' pairs in a fixed order), while warps 1..7 rank the
    // candidates; the probabilities from the keys' bits.
    Stats all;
    if (warp == 0 && job.with_stats) {
      all = warp_merge(pair);
      all = {__shfl_sync(kFull, all.m, 0), __shfl_sync(kFull, all.s, 0)};
    }
    if (candidates <= kRankCap) {
      rank_by_count(tail.cand, candidates, k, bs.sh.top);
      __syncthreads();
    } else if (candidates <= kCandCap) {
      const SharedKeys in_shared{tail.cand, candidates};
      select_top_k(in_shared, key_range(in_shared, bs.sh), k, bs.sh);
    } else {
      select_top_k(published, key_range(published, bs.sh), k, bs.sh);
    }
    if (warp == 0) {
      write_result_from_keys(bs.sh, job.row(b), job.values + size_t(b) * k, job.indices + size_t(b) * k, k,
                             job.probabilities, all);
    }
    finish_row(job.ws, b, job.with_stats, all);
    return;
  }
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

// A warp's sum of exp(v - top) over its lanes' slots (-inf slots add 0), in four chains of adds
// in a fixed order, then across the lanes; 0 when top is -inf. The s of v7's and v8's warp
// pairs (m, s).
template <int kN>
__device__ __forceinline__ float warp_exp_sum(const float (&v)[kN], float top) {
  float sum = 0.0f;
  if (top != -INFINITY) {
    float sums[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kN; ++j) sums[j % 4] += fast_exp2((v[j] - top) * kLog2e);
    sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFull, sum, o);
  return sum;
}

// Chunk s of row b, already in registers (v, -inf past its end): steps 1 (the maxima) to 5, and
// the row's select if this block is the row's last. Called by the whole block.
//
// kMaxima_ (v8's form, rows of at most 16 blocks): each warp's maximum is published too, and the
// last block selects as last_block_select<true> says.
template <bool kMaxima_ = false>
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
  if constexpr (kMaxima_) {
    if (lane == 0) published_maxima(job, b)[s * kWarps + warp] = maximum_key(warp_max, s * kWarps + warp);
  }

  // 3. The warp's (m, s), relative to its maximum.
  if (job.with_stats) {
    const float top = warp_max == 0 ? -INFINITY : from_ordered_bits(warp_max);
    const float sum = warp_exp_sum(v, top);
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
  if (bs.last) last_block_select<kMaxima_>(b, job, bs);
}

// Launches kernel (a v7 block kernel: grid (splits, B), 256 threads, one Job) for rows that
// allow float4 loads and need at most max_splits blocks; false (nothing launched) for others.
template <class Kernel>
bool launch_blocks(Kernel kernel, int max_splits, const float* x, float* probs, float* values, int32_t* indices, int B,
                   int V, int k, bool probabilities, void* workspace, cudaStream_t stream) {
  require_valid(B, V, k);
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t splits = (int64_t(V) + kChunk - 1) / kChunk;
  if (!vector || splits > max_splits) return false;
  launch_split_row(x, probs, B, V, int(splits), probabilities, true, workspace, stream,
                   [&](dim3 grid, int chunk, bool with_stats, const Workspace& ws) {
                     const Job job{x,           values,        indices,    V, k, chunk, kRowKeys / int(splits),
                                   int(splits), probabilities, with_stats, ws};
                     kernel<<<grid, kThreads, 0, stream>>>(job);
                   });
  return true;
}

}  // namespace

}  // namespace ch07::solution
