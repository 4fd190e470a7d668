// Step 17 (Hopper sm_90a only) — v13's pipeline with each tile's K loop split over several
// CTAs, the partial tiles added in a fixed order through an FP32 workspace, and the tile and
// the split chosen per shape from a wider menu of tiles.
//
// What changes over v13_wgmma_bias_ahead, and why. At M = 512 a GPT-2 linear is one wave of
// one tile per CTA, and v13's times follow the bytes its CTAs stream from L2 more closely than
// their math: every CTA reads its (BM, 64) box of x and its (BN, 64) box of W for each K step,
// so the whole grid reads M N K 2 (1 / BN + 1 / BM) bytes. With ~128 tiles to fill 132 SMs the
// tiles are small, and small tiles read the most: v13's (64, 48) tiles at 512 x 768 x 3072
// stream 88 MB for 2.4 GFLOP, and take about as long as that much traffic takes from L2.
// Larger tiles read less per FLOP but are fewer than the SMs. Split K gives them back: S CTAs
// share one tile, each running 1 / S of its K steps, so (tiles x S) CTAs fill the GPU while
// each reads only its slice of x's and W's rows.
//
// The partial tiles meet in global memory, deterministically (checks.deterministic):
//   * each consumer warpgroup's 64 x WN sub-tile is one "group" with two counters in the
//     workspace, arrived and written. After its K slice a warpgroup takes a ticket
//     (atomicAdd on arrived). Any but the last one writes its FP32 accumulators to the
//     workspace at its slice's place (thread t's float4 j at [j][t]: the registers as they
//     are, 512 contiguous bytes per warp and store), then, after a warpgroup barrier, one
//     thread fences and counts it written.
//   * the last one writes nothing: it waits until the other S - 1 are written (they hold
//     tickets, so they are running and past their K loops: no wait on a CTA that has not
//     started), resets both counters to 0 for the next call, and adds the S partial tiles
//     in the order of their slices, p0 + p1 + ... + p(S-1), its own from its registers.
//     The order does not depend on which CTA came last, so every run gives the same bits.
//   * then v13's epilogue on the registers: + bias (loaded before the K loop), GELU, one
//     rounding to BF16 — applied once, to the whole sum.
// The workspace is static device memory (no allocation in a call, so a call can be captured
// in a graph): 16 MB of partial tiles and the counters, one copy for each of the first two
// host threads that call this step (the model's second request prefills from a thread of its
// own). A third thread, or a plan whose partials do not fit, runs without a split. Two calls
// of one host thread on two streams at the same time would share a copy: the model never
// makes them.
//
// The plan. Each (BM, BN, S) is scored by a model of the two limits the measurements point at:
// one CTA's chain (its K steps, each the larger of its math and its boxes' bytes at ~64 bytes
// per cycle, then the last CTA's reads of the other partial tiles) and the whole grid's bytes
// through L2 (boxes, plus the partial tiles written and read) at ~3,500 bytes per cycle, plus a
// fixed ~5,000 cycles of launch, first loads and stores. On 132 SMs at M = 512 it takes
//   (to be filled from the measurements)
//
// Edges: as v13 (any M and N; K % 8 == 0 and aligned x, W, else the launcher runs v8). A
// slice has at least one K step (S <= ceil(K / 64)).
//
// Run: build/ch09/bin/ch09_bench --full --op=linear_bias/bf16 --impl=v17_wgmma_split_k,v13_wgmma_bias_ahead,reference
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "wgmma_linear.cuh"

namespace ch09::solution::hopper {

namespace split_linear {

using linear::Tile;

constexpr int kMaxSplits = 8;
constexpr int kSlots = 2;                            // host threads with a workspace of their own
constexpr size_t kPartialFloat4s = size_t(1) << 20;  // 16 MB of partial tiles per slot
constexpr int kMaxGroups = 4096;                     // (tile, consumer warpgroup) counters per slot
// Splits of more than 2 add the partials in slice order with up to 7 loads in flight per
// chunk; above 72 accumulators a thread (WN > 144) that no longer fits the registers.
constexpr int kMaxAccForWideSplit = 72;

// The workspace: zero when the module loads; the counters return to zero after every tile.
__device__ float4 g_partial[kSlots][kPartialFloat4s];
__device__ unsigned g_arrived[kSlots][kMaxGroups];
__device__ unsigned g_written[kSlots][kMaxGroups];

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// v13's epilogue (the bias ahead of the K loop; + bias, GELU, one rounding) on the whole sum of
// a tile whose K steps are split `splits` ways; `slot`: the host thread's copy of the workspace.
struct SplitStore : BiasAheadStore {
  static constexpr bool kSplitK = true;
  int splits, slot;

  // A consumer warpgroup's part of a split tile, after its K slice (all 128 threads call it).
  // false: another warpgroup of the group will finish the tile; true: this one arrived last,
  // and d now holds p0 + p1 + ... + p(S-1), in that order.
  template <int R>
  __device__ __forceinline__ bool gather(float (&d)[R], int group, int slice) const {
#if defined(WB_SM90A_GEMM)
    __shared__ int ticket[2];  // each consumer warpgroup's place in its group's arrivals
    constexpr int kChunks = R / 4;
    const int t = threadIdx.x % 128, cw = threadIdx.x / 128 - 1, bar = 1 + cw;
    unsigned* arrived = &g_arrived[slot][group];
    unsigned* written = &g_written[slot][group];
    const float4* group_ws = &g_partial[slot][size_t(group) * splits * kChunks * 128];
    if (t == 0) ticket[cw] = int(atomicAdd(arrived, 1u));
    wb::sm90::warpgroup_barrier(bar);
    if (ticket[cw] != splits - 1) {
      float4* mine = const_cast<float4*>(group_ws) + size_t(slice) * kChunks * 128 + t;
#pragma unroll
      for (int j = 0; j < kChunks; ++j) {
        __stcg(mine + j * 128, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
      }
      wb::sm90::warpgroup_barrier(bar);  // every thread's partial is stored ...
      if (t == 0) {
        __threadfence();  // ... and ordered before the count (cumulative through the barrier)
        atomicAdd(written, 1u);
      }
      return false;
    }
    if (t == 0) {
      while (load_acquire(written) != unsigned(splits - 1)) {
      }
      *arrived = 0u;  // for the next call (no CTA of this one touches them again)
      *written = 0u;
    }
    wb::sm90::warpgroup_barrier(bar);
    if (splits == 2) {  // p0 + p1 = p1 + p0 exactly: the other's partial added in place
      const float4* other = group_ws + size_t(1 - slice) * kChunks * 128 + t;
#pragma unroll
      for (int j = 0; j < kChunks; ++j) {
        const float4 v = __ldcg(other + j * 128);
        d[4 * j] += v.x, d[4 * j + 1] += v.y, d[4 * j + 2] += v.z, d[4 * j + 3] += v.w;
      }
      return true;
    }
    if constexpr (R <= kMaxAccForWideSplit) {  // (fits: wider tiles split at most 2 ways)
#pragma unroll
      for (int j = 0; j < kChunks; ++j) {
        float4 part[kMaxSplits];
#pragma unroll
        for (int s = 0; s < kMaxSplits; ++s) {
          if (s < splits && s != slice) part[s] = __ldcg(group_ws + (size_t(s) * kChunks + j) * 128 + t);
        }
        const float4 own = make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
        float4 sum = slice == 0 ? own : part[0];
#pragma unroll
        for (int s = 1; s < kMaxSplits; ++s) {
          if (s < splits) {
            const float4 v = s == slice ? own : part[s];
            sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
          }
        }
        d[4 * j] = sum.x, d[4 * j + 1] = sum.y, d[4 * j + 2] = sum.z, d[4 * j + 3] = sum.w;
      }
    }
    return true;
#else
    return false;
#endif
  }
};

// The tiles of the plan: v13's and wider ones, which only split K makes fill the SMs.
using Tiles = std::tuple<Tile<128, 256>, Tile<128, 208>, Tile<128, 192>, Tile<128, 160>, Tile<128, 144>, Tile<128, 128>,
                         Tile<128, 96>, Tile<128, 72>, Tile<64, 256>, Tile<64, 192>, Tile<64, 144>, Tile<64, 112>,
                         Tile<64, 96>, Tile<64, 48>>;

struct Plan {
  int bm = 0, bn = 0, splits = 1;
};

// Whether a plan's partial tiles and counters fit one slot of the workspace.
inline bool fits(int bm, int bn, int splits, int M, int N, int K) {
  if (splits == 1) return true;
  if (splits > kMaxSplits || splits > ceil_div(K, 64)) return false;
  if (splits > 2 && (bm == 128 ? bn : bn / 2) / 2 > kMaxAccForWideSplit) return false;
  const long long tiles = (long long)ceil_div(M, bm) * ceil_div(N, bn);
  return tiles * 2 <= kMaxGroups && tiles * splits * bm * bn <= (long long)kPartialFloat4s * 4;
}

// The model (cycles on one SM's clock): fixed + the larger of one CTA's chain and the grid's
// L2 bytes, + the last CTA's reads of the other partial tiles.
inline double score(int bm, int bn, int splits, int M, int N, int K, int sms) {
  const double tiles = double(ceil_div(M, bm)) * ceil_div(N, bn), units = tiles * splits;
  const double waves = std::ceil(units / sms), steps = std::ceil(double(ceil_div(K, 64)) / splits);
  const double math = bm * bn / 32.0, stage_bytes = (bm + bn) * 128.0;
  const double chain = waves * steps * std::max(math, stage_bytes / 64.0);
  const double partial = 4.0 * bm * bn;  // bytes of one partial tile
  const double l2 = (units * steps * stage_bytes + 2.0 * tiles * (splits - 1) * partial) / 3500.0;
  const double fixup = splits > 1 ? 1500.0 + (splits - 1) * partial / 64.0 : 0.0;
  return 5000.0 + std::max(chain, l2) + fixup;
}

// The plan for a shape: WB_CH09_V17_PLAN = "BMxBNsS" (e.g. 128x96s4) forces one, for
// measurements; otherwise the lowest score over the tiles and S = 1 .. 8 that fit.
inline Plan best_plan(int M, int N, int K, int sms, bool have_workspace) {
  if (const char* forced = std::getenv("WB_CH09_V17_PLAN"); forced != nullptr && *forced != '\0') {
    Plan p;
    if (std::sscanf(forced, "%dx%ds%d", &p.bm, &p.bn, &p.splits) != 3) {
      throw std::invalid_argument(std::string("WB_CH09_V17_PLAN=") + forced + ": expected BMxBNsS, e.g. 128x96s4");
    }
    if (!have_workspace || !fits(p.bm, p.bn, p.splits, M, N, K)) p.splits = 1;
    return p;
  }
  Plan best;
  double best_score = INFINITY;
  [&]<size_t... I>(std::index_sequence<I...>) {
    auto consider = [&](int bm, int bn) {
      for (int s = 1; s <= kMaxSplits; ++s) {
        if (s > 1 && (!have_workspace || !fits(bm, bn, s, M, N, K))) continue;
        const double sc = score(bm, bn, s, M, N, K, sms);
        if (sc < best_score) best_score = sc, best = Plan{bm, bn, s};
      }
    };
    (consider(std::tuple_element_t<I, Tiles>::BM, std::tuple_element_t<I, Tiles>::BN), ...);
  }
  (std::make_index_sequence<std::tuple_size_v<Tiles>>{});
  return best;
}

// run(T{}) for the tile T of Tiles that the plan names.
template <class Run>
void with_tile(const Plan& p, Run&& run) {
  const bool found = [&]<size_t... I>(std::index_sequence<I...>) {
    return ((p.bm == std::tuple_element_t<I, Tiles>::BM && p.bn == std::tuple_element_t<I, Tiles>::BN
                 ? (run(std::tuple_element_t<I, Tiles>{}), true)
                 : false) ||
            ...);
  }
  (std::make_index_sequence<std::tuple_size_v<Tiles>>{});
  if (!found) {
    throw std::invalid_argument("v17_wgmma_split_k: no tile (" + std::to_string(p.bm) + ", " + std::to_string(p.bn) +
                                ")");
  }
}

// This host thread's slot of the workspace, or -1 (the first kSlots threads that call get one).
inline int workspace_slot() {
  static std::atomic<int> next{0};
  thread_local const int slot = [] {
    const int s = next.fetch_add(1);
    return s < kSlots ? s : -1;
  }();
  return slot;
}

}  // namespace split_linear

void linear_wgmma_split_k(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                          cudaStream_t stream) {
  const int sms = wb::sm_count();
  const bool pairs = N % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
  const int slot = split_linear::workspace_slot();
  const split_linear::Plan plan = split_linear::best_plan(M, N, K, sms, slot >= 0);
  const split_linear::SplitStore store{{{b, y, M, N, epi, pairs}}, plan.splits, std::max(slot, 0)};
  split_linear::with_tile(
      plan, [&](auto tile) { linear::launch<decltype(tile)>(x, w, M, N, K, store, sms, stream, "v17_wgmma_split_k"); });
}

}  // namespace ch09::solution::hopper
