// v9 — the rows streamed by the copy engine: a resident grid whose blocks read their logits
// from a ring in shared memory that 1-D bulk copies keep full, with one running threshold per
// block instead of a floor per chunk.
//
// Over v8 (at batch >= 64, where v8 runs v7's blocks): v8 reaches 46-53 % of the copy roofline
// there (64 x 128,256: 24.1 us; 256 x 128,256: 59.7 us). Nsight Compute on v7's blocks: DRAM
// 36 % busy, issue slots 58 %. A block has its 32 KB in flight only while it loads; then it
// computes its floor, writes its survivors and counts itself in with nothing in flight, and
// each of the 8,192 logits it holds pays for three barriers, the floor's votes and a share of
// the last block's select. v9 changes both:
//
//   1. Loads the registers do not wait for. Thread 0 of each block asks the copy engine for
//      tiles of 4,096 logits (16 KB, one cp.async.bulk each) into a ring of kStages = 4 tiles in
//      shared memory; each completes on the stage's mbarrier (the transaction count is the
//      tile's bytes). While the block works on tile q, tiles q + 1 .. q + kStages - 1 are in
//      flight: 48 KB a block, 96 KB an SM at two blocks. After the block's one barrier per
//      tile, thread 0 hands the stage just read to tile q + kStages.
//   2. A resident grid (two blocks an SM) over items: an item is a row, or a 1/splits part of
//      one (splits = 4 at 64 rows: 256 items for 264 blocks), and a block walks its items' tiles
//      as one stream, so the next item's tiles are in flight while the block finishes an item.
//   3. Few instructions a logit. Each thread reads 16 logits of a tile (four 16-byte shared
//      loads) and, for the softmax forms, updates its own (m, s): the tile's maximum first, one
//      rescale when it rose, then one FMA, one MUFU ex2 and one add a logit (exp2(x log2e - c),
//      c = m log2e rounded; the rounding residue corrects the sum once, at the item's end). The
//      top-k test is one compare of the thread's tile maximum with the block's threshold; only
//      a thread whose maximum reaches it compares its 16 logits, and a warp with survivors takes
//      a range of the block's survivor list (one shared atomic, a shuffle scan) for their keys.
//      The tile's barrier is the block's only one: a tile's survivors are counted in one of
//      three counters in turn, so that the faster warps append the next tile's while the
//      slower ones still read this tile's count (one counter for all let them read different
//      counts and part ways at the next barrier).
//   4. A threshold that rises as the item streams. On an item's first tile the threshold is
//      v8's floor: the k-th largest of 128 maxima (here, of 32 logits each), counted. When the
//      survivor list holds kRefineAt keys or more after a tile, the block ranks it (by counting,
//      up to 224 keys; v5's radix select above that), keeps the k best, and the threshold
//      becomes "above the k-th best key": later tiles hold higher indices only, so a logit equal
//      to the k-th best is behind it in the chapter's order, and the test stays one float
//      compare (>= the next float above it). For rows drawn from normal(0, 2) the list takes
//      some 60 keys from the first tile and a few a tile later: two or three rankings a row.
//   5. An item's end: the list ranked once more (its k best), the block's (m, s) merged from
//      the threads' pairs in a fixed order. A whole row: warp 0 writes the result. A part of a
//      row: the block publishes its k keys and (m, s) in the workspace and counts itself in
//      (v7's one fence); the row's last block keeps the published keys that reach the highest
//      of the parts' k-th keys (about k of splits x k), ranks them and writes the row.
//
// Exact paths, slow and rare: more survivors than the list holds (kBufCap: thousands of equal
// logits, a floor of -inf) make the block select the item's top k from memory (v5's select
// over the item read again), as v7's blocks do.
//
//   block: 256 threads; the ring: kStages x 4,096 logits (16 KB each); the list: 1,024 keys
//   B = 256, V = 128,256: 256 items (a row each) on 2 x 132 blocks, 32 tiles an item
//   B = 64,  V = 128,256: 256 items (a quarter row, 32,064 logits, 8 tiles) on 264 blocks
//
// What it serves: rows of at least 4,096 logits that allow float4 loads and 16-byte bulk
// copies (V % 4 == 0, x 16-byte aligned), on a GPU of compute capability >= 9.0, where v8 runs
// its blocks (the batch's clusters would share SMs); the rest goes to v8 (which routes on).
//
// From radix_select.cuh: the floor of the maxima, the ranking by counting, the radix select
// and its key sources, the result's write. From split_common.cuh: the workspace and the row's
// counter, the launch with the probabilities pass. From harness/device/sm90.cuh: the
// mbarriers and the 1-D bulk copy.
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v8_cluster_floor,v9_bulk_ring
#include <cstdint>

#include "device/sm90.cuh"
#include "ladder.cuh"
#include "radix_select.cuh"
#include "row_topk.cuh"
#include "runtime/device.cuh"
#include "runtime/launch_helpers.cuh"
#include "split_common.cuh"

namespace ch07::solution {
namespace {

constexpr int kStages = 4;              // tiles in the ring
constexpr int kPer = 16;                // logits a thread reads from a tile
constexpr int kTile = kThreads * kPer;  // 4,096 logits, 16 KB
constexpr int kBufCap = 1024;           // the survivor list (8 KB)
constexpr int kRefineAt = 192;          // the list is ranked after a tile that leaves this many
constexpr int kMaxSplits9 = 16;         // items a row, at most
constexpr int kMinItem = 2 * kTile;     // logits an item, at least (when a row is split)
static_assert(kRefineAt >= kMaxK && kRefineAt <= kRankCap, "a ranking keeps k and counts at most 224");
static_assert(kMaxSplits9 * kMaxK <= kBufCap, "the row's published keys fit in the list");
static_assert(kMaxSplits9 <= kMaxSplits && kMaxSplits9 <= 32, "warp 0 reads one part a lane");

// A block's shared state besides the ring.
struct RingShared {
  SelectShared sh;         // the rankings' and selects' state; sh.top: the k best
  Key list[kBufCap];       // the survivors' keys (at an item's start: the 128 maxima)
  uint64_t full[kStages];  // the ring's barriers
  float2 pairs[kWarps];    // block_stats' area
  uint32_t floor_bits;
  Key row_floor;
  // The keys tile q appends to the list (counting on past kBufCap) are counted in added[q % 3],
  // after the `base` keys of the tiles before: every thread reads added[q % 3] after the tile's
  // barrier while the faster warps already count tile q + 1's in the next slot, and thread 0
  // zeroes added[(q + 2) % 3] (read by all before that barrier) for tile q + 2.
  int added[3];
  int gathered;  // the row's last block: the candidates listed
  bool last;
};

// What every launch shares: the logits, the outputs, the items.
struct RingJob {
  const float* x;
  float* values;
  int32_t* indices;
  int V, k, chunk, splits, items, tiles;  // item i: row i / splits, part i % splits; tiles an item
  bool probabilities;
  Workspace ws;
};

// A walk over block c's tiles: items c, c + gridDim.x, ..., each tile 0 .. tiles - 1 of it.
struct TileWalk {
  int item, t, b, s;  // the item; the tile's place in it; its row, part
  int begin, end;     // the item: [begin, end) of row b
  int lo, hi;         // the tile: [lo, hi); hi < lo for a tile past the item's end

  __device__ __forceinline__ void start(const RingJob& job, int first_item) {
    item = first_item, t = 0;
    b = item / job.splits, s = item % job.splits;
    begin = min(job.V, s * job.chunk), end = min(job.V, begin + job.chunk);
    lo = begin, hi = min(end, lo + kTile);
  }
  __device__ __forceinline__ void next(const RingJob& job) {
    if (++t == job.tiles) {
      start(job, item + int(gridDim.x));
    } else {
      lo += kTile, hi = min(end, lo + kTile);
    }
  }
  __device__ __forceinline__ bool more(const RingJob& job) const { return item < job.items; }
};

// Thread 0: tile `at` into stage q % kStages (a barrier arrival alone for a tile past its
// item's end).
__device__ __forceinline__ void request(const RingJob& job, const TileWalk& at, int q, float* ring, RingShared& rs) {
#if __CUDA_ARCH__ >= 900
  const int stage = q % kStages;
  const uint32_t bar = wb::ptx::smem_u32(&rs.full[stage]);
  if (at.hi > at.lo) {
    const uint32_t bytes = uint32_t(at.hi - at.lo) * 4u;
    wb::sm90::mbar_arrive_expect_tx(bar, bytes);
    wb::sm90::bulk_load_1d(wb::ptx::smem_u32(ring + size_t(stage) * kTile), job.x + size_t(at.b) * job.V + at.lo, bytes,
                           bar);
  } else {
    wb::sm90::mbar_arrive(bar);
  }
#endif
}

// Thread 0: the ring's barriers, one arrival (thread 0's request) a phase.
__device__ __forceinline__ void ring_init(RingShared& rs) {
#if __CUDA_ARCH__ >= 900
  for (int st = 0; st < kStages; ++st) wb::sm90::mbar_init(wb::ptx::smem_u32(&rs.full[st]), 1);
  wb::sm90::fence_mbarrier_init();
#endif
}

// Waits until tile q's bytes have landed in its stage.
__device__ __forceinline__ void ring_wait(RingShared& rs, int q) {
#if __CUDA_ARCH__ >= 900
  wb::sm90::mbar_wait(wb::ptx::smem_u32(&rs.full[q % kStages]), uint32_t(q / kStages) & 1u);
#endif
}

// The threshold as a float: logits >= it survive. `bits` are ordered bits; at or below -inf's
// the threshold is -inf (every logit survives); above +inf's it is a NaN (none does).
__device__ __forceinline__ float threshold_of(uint32_t bits) {
  return bits <= ordered_bits(-INFINITY) ? -INFINITY : from_ordered_bits(bits);
}

// The survivors among a thread's 16 logits of tile [lo, ...) (v >= thr; `check`: and inside
// [lo, hi), for a threshold of -inf on a short tile) appended to the list after its first
// `base` keys, counted in *added: one atomic a warp.
__device__ __forceinline__ void append(const float (&v)[kPer], float tmax, float thr, bool check, int lo, int hi,
                                       int base, int* added, RingShared& rs) {
  int n = 0;
  if (tmax >= thr) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) n += v[j] >= thr && (!check || slot_index<true>(lo, j) < hi);
  }
  if (!__any_sync(kFull, n > 0)) return;
  int at = base + warp_claim(n, [&] { return added; });
  if (n > 0) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      if (v[j] >= thr && (!check || slot_index<true>(lo, j) < hi)) {
        if (at < kBufCap) rs.list[at] = make_key(v[j], slot_index<true>(lo, j));
        ++at;
      }
    }
  }
}

// sh.top := the k best of the list's n keys (n >= k, n <= kBufCap). Whole block.
__device__ __forceinline__ void rank_list(int n, int k, RingShared& rs) {
  if (n <= kRankCap) {
    rank_by_count(rs.list, n, k, rs.sh.top);
    __syncthreads();
  } else {
    const SharedKeys keys{rs.list, n};
    select_top_k(keys, key_range(keys, rs.sh), k, rs.sh);
  }
}

// A thread's online pair over the tiles: m its largest logit, s the sum of exp2(x log2e - c)
// with c = m log2e rounded (so one FMA a logit); the residue r = m log2e - c makes it the
// pair's s at the end: s 2^-r.
struct ThreadPair {
  float m = -INFINITY, c = -INFINITY, s = 0.0f;

  __device__ __forceinline__ void add(const float (&v)[kPer], float tmax) {
    if (tmax > m) {  // the tile's maximum is new: a new base, the sum rescaled
      const float c_new = tmax * kLog2e;
      s = m == -INFINITY ? 0.0f : s * exp2f(c - c_new);
      m = tmax, c = c_new;
    }
    if (m == -INFINITY) return;
    float sums[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kPer; ++j) sums[j % 4] += fast_exp2(fmaf(v[j], kLog2e, -c));
    s += (sums[0] + sums[1]) + (sums[2] + sums[3]);
  }

  __device__ __forceinline__ Stats stats() const {
    if (m == -INFINITY) return Stats{};
    return Stats{m, s * exp2f(-fmaf(m, kLog2e, -c))};
  }
};

// An item's end: sh.top holds its k best, the block's pair is `all`. A whole row: its result.
// A part: published, and the row's last block writes the row. Whole block.
__device__ __forceinline__ void finish_item(const RingJob& job, const TileWalk& at, Stats all, RingShared& rs) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, k = job.k;
  const bool with_stats = job.probabilities;  // the pair is kept for the probabilities pass too
  float* const values = job.values + size_t(at.b) * k;
  int32_t* const indices = job.indices + size_t(at.b) * k;
  const float* const row = job.x + size_t(at.b) * job.V;
  if (job.splits == 1) {
    if (warp == 0) write_result_from_keys(rs.sh, row, values, indices, k, job.probabilities, all);
    finish_row(job.ws, at.b, with_stats, all);
    return;
  }
  Key* const parts = job.ws.keys + size_t(at.b) * kMaxSplits * kMaxK;  // part s: parts + s * kMaxK
  if (threadIdx.x < k) parts[size_t(at.s) * kMaxK + threadIdx.x] = rs.sh.top[threadIdx.x];
  if (threadIdx.x == 0) {
    if (with_stats) job.ws.stats[size_t(at.b) * kMaxSplits + at.s] = make_float2(all.m, all.s);
  }
  __syncthreads();
  if (threadIdx.x == 0) {  // v7's one fence: the barrier ordered the block's writes before it
    __threadfence();
    const bool last = atomicAdd(&job.ws.counters[at.b], 1u) == unsigned(job.splits - 1);
    if (last) __threadfence();
    rs.last = last;
    rs.gathered = 0;
  }
  __syncthreads();
  if (!rs.last) return;

  // The row's last block: the parts' keys and pairs from L2; the row floor (the highest of the
  // parts' k-th keys: k keys of the row reach it) from warp 0; the keys that reach it listed.
  const int n = job.splits * k;
  Key key[kBufCap / kThreads];
#pragma unroll
  for (int u = 0; u < kBufCap / kThreads; ++u) {
    const int i = threadIdx.x + u * kThreads;
    key[u] = i < n ? __ldcg(parts + size_t(i / k) * kMaxK + i % k) : kNoKey;
  }
  Stats pair;
  if (warp == 0) {
    Key f = lane < job.splits ? __ldcg(parts + size_t(lane) * kMaxK + k - 1) : kNoKey;
    if (with_stats && lane < job.splits) {
      const float2 q = __ldcg(job.ws.stats + size_t(at.b) * kMaxSplits + lane);
      pair = Stats{q.x, q.y};
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) f = kmax(f, __shfl_xor_sync(kFull, f, o));
    if (lane == 0) rs.row_floor = f;
  }
  __syncthreads();
  const Key floor = rs.row_floor;
#pragma unroll
  for (int u = 0; u < kBufCap / kThreads; ++u) {
    if (is_real(key[u]) && key[u] >= floor) rs.list[atomicAdd(&rs.gathered, 1)] = key[u];
  }
  __syncthreads();
  // The row's pair by warp 0 (the parts' pairs in a fixed order) while the others rank.
  Stats row_pair;
  if (warp == 0 && with_stats) {
    row_pair = warp_merge(pair);
    row_pair = {__shfl_sync(kFull, row_pair.m, 0), __shfl_sync(kFull, row_pair.s, 0)};
  }
  rank_list(rs.gathered, k, rs);
  if (warp == 0) write_result_from_keys(rs.sh, row, values, indices, k, job.probabilities, row_pair);
  finish_row(job.ws, at.b, with_stats, row_pair);
}

// grid: a resident grid (blocks_per_gpu), 256 threads, dynamic shared memory: the ring, then
// RingShared. Block c takes items c, c + gridDim.x, ...; kStats: the softmax forms' pairs.
// Launched on compute capability >= 9.0 only (the ring's copies and barriers are sm_90's).
template <bool kStats>
__global__ void __launch_bounds__(kThreads, 2) bulk_ring_kernel(RingJob job) {
  extern __shared__ __align__(128) unsigned char smem[];
  float* const ring = reinterpret_cast<float*>(smem);
  RingShared& rs = *reinterpret_cast<RingShared*>(smem + size_t(kStages) * kTile * sizeof(float));
  const int k = job.k;

  if (threadIdx.x == 0) {
    ring_init(rs);
    rs.added[0] = rs.added[1] = rs.added[2] = 0;
  }
  __syncthreads();
  TileWalk ahead;  // thread 0: the next tile to request, tile q + kStages while tile q is read
  ahead.start(job, blockIdx.x);
  if (threadIdx.x == 0) {
    for (int q = 0; q < kStages && ahead.more(job); ++q, ahead.next(job)) request(job, ahead, q, ring, rs);
  }

  ThreadPair pair;
  float thr = -INFINITY;  // survivors: logits >= thr
  int base = 0;           // the list's keys from the item's tiles before this one
  bool overflow = false;  // the list lost keys: the item's top k from memory
  TileWalk at;
  at.start(job, blockIdx.x);
  for (int q = 0; at.more(job); ++q, at.next(job)) {
    const int stage = q % kStages;
    ring_wait(rs, q);

    if (at.hi > at.lo) {
      // The thread's 16 logits (-inf past the tile's end), its maximum.
      const float4* tile = reinterpret_cast<const float4*>(ring + size_t(stage) * kTile);
      const bool short_tile = at.hi - at.lo < kTile;
      float v[kPer];
#pragma unroll
      for (int g = 0; g < kPer / 4; ++g) {
        float4 x4 = tile[threadIdx.x + g * kThreads];
        if (short_tile && slot_index<true>(at.lo, 4 * g) >= at.hi)
          x4 = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        v[4 * g] = x4.x, v[4 * g + 1] = x4.y, v[4 * g + 2] = x4.z, v[4 * g + 3] = x4.w;
      }
      float part[4] = {v[0], v[1], v[2], v[3]};
#pragma unroll
      for (int j = 4; j < kPer; ++j) part[j % 4] = fmaxf(part[j % 4], v[j]);
      const float tmax = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
      if constexpr (kStats) pair.add(v, tmax);

      if (at.t == 0) {
        // The item's first tile (a full one): the floor of the maxima of 128 pairs of threads.
        const bool holds = slot_index<true>(at.lo, 0) < at.hi;
        uint32_t bits = holds ? ordered_bits(tmax) : 0u;
        bits = max(bits, __shfl_xor_sync(kFull, bits, 1));
        uint32_t* const maxima = reinterpret_cast<uint32_t*>(rs.list);  // free until the survivors
        if ((threadIdx.x & 1) == 0) maxima[threadIdx.x / 2] = maximum_key(bits, threadIdx.x / 2);
        if (threadIdx.x == 0) rs.floor_bits = 0;
        __syncthreads();
        floor_of_maxima(maxima, k, rs.sh.hist, [&](uint32_t f) { rs.floor_bits = f; });
        __syncthreads();
        thr = threshold_of(rs.floor_bits);
      }
      append(v, tmax, thr, short_tile && thr == -INFINITY, at.lo, at.hi, base, &rs.added[q % 3], rs);
    }
    __syncthreads();  // the stage is read, the list complete for this tile
    if (threadIdx.x == 0 && ahead.more(job)) {
      request(job, ahead, q + kStages, ring, rs);
      ahead.next(job);
    }
    const int n = base + rs.added[q % 3];  // the same on every thread (see RingShared::added)
    if (threadIdx.x == 0) rs.added[(q + 2) % 3] = 0;
    overflow = overflow || n > kBufCap;

    if (at.t == job.tiles - 1) {
      // The item's end: its k best, its pair, its result or its part of the row.
      if (!overflow) {
        rank_list(n, k, rs);
      } else {
        const ChunkInMemory again{job.x + size_t(at.b) * job.V, at.begin, at.end};
        select_top_k(again, key_range(again, rs.sh), k, rs.sh);
      }
      Stats all;
      if constexpr (kStats) all = block_stats<kWarps>(pair.stats(), reinterpret_cast<Stats*>(rs.pairs));
      finish_item(job, at, all, rs);
      __syncthreads();  // the list and sh.top are free again
      pair = ThreadPair{};
      thr = -INFINITY;
      overflow = false;
      base = 0;
    } else if (overflow) {
      thr = __uint_as_float(0x7fffffffu);  // a NaN: nothing survives any more
      base = n;
    } else if (n >= kRefineAt) {
      // The list ranked: its k best kept, the threshold just above the k-th.
      rank_list(n, k, rs);
      const Key kth = rs.sh.top[k - 1];
      if (threadIdx.x < k) rs.list[threadIdx.x] = rs.sh.top[threadIdx.x];
      __syncthreads();
      thr = threshold_of(uint32_t(kth >> 32) + 1u);
      base = k;
    } else {
      base = n;
    }
  }
}

// --- the launch ----------------------------------------------------------------------------

template <bool kStats>
struct RingKernel {
  static constexpr int kSmem = kStages * kTile * int(sizeof(float)) + int(sizeof(RingShared));
  static int blocks() {  // resident blocks of the GPU (asked once)
    static const int n = [] {
      wb::allow_dynamic_smem(bulk_ring_kernel<kStats>, kSmem);
      return wb::blocks_per_gpu(bulk_ring_kernel<kStats>, kThreads, kSmem);
    }();
    return n;
  }
};

// The parts a row is cut into: the work of the busiest block, in rows, is ceil(B s / blocks) / s;
// more parts are taken only where that falls by 10 % or more (each part adds a publication and
// a merge); parts of at least kMinItem logits, at most kMaxSplits9.
int choose_splits(int64_t B, int V, int blocks) {
  int best = 1;
  int64_t best_rounds = (B + blocks - 1) / blocks;
  for (int s = 2; s <= kMaxSplits9 && int64_t(V) >= int64_t(s) * kMinItem; ++s) {
    const int64_t rounds = (B * s + blocks - 1) / blocks;
    if (10 * rounds * best <= 9 * best_rounds * s) best = s, best_rounds = rounds;
  }
  return best;
}

// Launches the kernel; false (nothing launched) where no block of it fits on an SM.
template <bool kStats>
bool launch_ring(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
                 void* workspace, cudaStream_t stream) {
  using K = RingKernel<kStats>;
  const int blocks = K::blocks();
  if (blocks <= 0) return false;
  const int splits = choose_splits(B, V, blocks);
  launch_split_row(
      x, probs, B, V, splits, probabilities, true, workspace, stream, [&](dim3, int chunk, bool, const Workspace& ws) {
        const int items = B * splits;  // B <= 2^31 / 16 for the workspace to exist
        const RingJob job{x, values, indices, V, k, chunk, splits, items, (chunk + kTile - 1) / kTile, probabilities,
                          ws};
        bulk_ring_kernel<kStats><<<std::min(items, blocks), kThreads, K::kSmem, stream>>>(job);
      });
  return true;
}

// Whether v9 serves the shape (and launched it); `any_batch`: also where v8 runs its clusters.
bool launch(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            void* workspace, cudaStream_t stream, bool any_batch) {
  require_valid(B, V, k);
  static const bool tma = wb::query_device().has_tma();
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  if (!tma || !vector || V < kTile) return false;
  if (!any_batch && int64_t(B) * 16 <= wb::sm_count()) return false;  // v8's clusters (B x 16 CTAs) fit
  if (probabilities) return launch_ring<true>(x, probs, values, indices, B, V, k, true, workspace, stream);
  return launch_ring<false>(x, probs, values, indices, B, V, k, false, workspace, stream);
}

}  // namespace

// v9 where it serves, v8 elsewhere; the _all forms run v9 at every batch (the checks on every
// shape class; not benchmarked by default).
#define CH07_V9_FORMS(suffix, any_batch)                                                                             \
  void topk_bulk_ring##suffix(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace, \
                              cudaStream_t stream) {                                                                 \
    if (!launch(x, nullptr, values, indices, B, V, k, false, workspace, stream, any_batch)) {                        \
      topk_cluster_floor(x, values, indices, B, V, k, workspace, stream);                                            \
    }                                                                                                                \
  }                                                                                                                  \
  void softmax_topk_bulk_ring##suffix(const float* x, float* values, int32_t* indices, int B, int V, int k,          \
                                      void* workspace, cudaStream_t stream) {                                        \
    if (!launch(x, nullptr, values, indices, B, V, k, true, workspace, stream, any_batch)) {                         \
      softmax_topk_cluster_floor(x, values, indices, B, V, k, workspace, stream);                                    \
    }                                                                                                                \
  }                                                                                                                  \
  void softmax_topk_probs_bulk_ring##suffix(const float* x, float* probs, float* values, int32_t* indices, int B,    \
                                            int V, int k, void* workspace, cudaStream_t stream) {                    \
    if (!launch(x, probs, values, indices, B, V, k, true, workspace, stream, any_batch)) {                           \
      softmax_topk_probs_cluster_floor(x, probs, values, indices, B, V, k, workspace, stream);                       \
    }                                                                                                                \
  }

CH07_V9_FORMS(, false)
CH07_V9_FORMS(_all, true)

}  // namespace ch07::solution
