// v5 — radix select: each CTA holds its chunk in registers and finds its top k by counting.
//
// Over v4: v4 is not limited by DRAM (12 % of it at 64 x 128,256, k 50) but by fixed costs.
// Each of its warps sees only ~2000 logits, yet keeps its own sorted 64-slot list, flushes a
// staging area about four times (each flush a 21-step bitonic sort of 64-bit keys over
// shuffles), then merges 8 lists per CTA and 8 to 64 partial lists per row. Here nothing is
// kept sorted while the row streams by:
//
//   1. Load. A CTA of 256 threads takes a chunk of up to 256 x `slots` logits (slots 4 to
//      32) and loads ALL of it into registers at once (float4 streaming loads): every load
//      is in flight together, one DRAM round trip per CTA. The online (m, s) pair is
//      accumulated from the registers, and each logit becomes its ordered bits (the high
//      half of row_topk.cuh's 64-bit key).
//   2. A floor. Each thread's largest logit is one of 256 "maxima". The k-th largest of
//      them is a floor: at least k logits (those maxima) reach it, so the chunk's k largest
//      all do. For smooth data few others do: about 55 logits for k = 50 (k + k/8 or so).
//   3. Radix select finds that floor without sorting: count the maxima in 2048 bins by the
//      top 11 bits of their keys (shared-memory atomics), walk the bins down from the top
//      until k are covered: that bin holds the k-th largest. If it holds too many, count
//      the keys in it again by their next 11 bits; keys are unique (index in the low half),
//      so this ends. The floor is the bottom of the last bin.
//   4. Gather the logits that reach the floor (<= 128 of them) in shared memory and rank
//      them: a key's place in the output is the number of gathered keys above it. No sort.
//      If more than 128 reach it (thousands of equal logits), the chunk gets the radix
//      select proper, over all its keys, read again from memory: slow, correct, and rare.
//   5. As in v4, a row split over CTAs publishes each CTA's k keys and (m, s) into the
//      workspace, and the last CTA of the row merges them — with the same radix select, over
//      the up to 128 x 64 published keys read from L2.
//
//   per CTA:   256 threads x slots logits       in registers, read once
//   per row:   splits = ceil(V / (256 x slots)) CTAs       <= kMaxSplits
//   B = 64,  V = 128,256:  slots 32: 16 CTAs per row of 8,016 logits, 1024 CTAs
//   B = 1,   V = 128,256:  slots 4: 126 CTAs per row of ~1,020 logits
//
// The work per logit is a load, an exp (for probabilities), a max and a compare; the work
// per CTA is a histogram of 256 numbers and the ranking of ~60: no list, no network.
//
// The full-probability form writes the probabilities with a second small kernel, as v4.
//
// The radix select itself (steps 2 to 4: the histogram passes, the survivors and their
// ranking, the chunk in registers) is in radix_select.cuh, which v6 shares.
//
// From row_topk.cuh: the keys, the online softmax pair, the probabilities kernel, and
// FormSpaces (the tunable space of each op); wb::with_constant (harness/runtime/launch_helpers.cuh)
// picks the kernel instance for the tuned values. From split_common.cuh: the workspace,
// finish_row (the row's (M, S) kept, its counter reset), launch_split_row (the chunks, the launch check, the
// probabilities pass) and CH07_SPLIT_STEP (the step's tunable spaces and its three top-k forms).
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v5_radix_select
#include <stdexcept>

#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "radix_select.cuh"
#include "row_topk.cuh"
#include "split_common.cuh"
#include "tune/choose.cuh"

namespace ch07::solution {
namespace {

// The keys the CTAs of a row published: list p is keys[p * kMaxK, p * kMaxK + k).
struct PublishedKeys {
  const Key* keys;
  int splits, k;
  template <class F>
  __device__ __forceinline__ void for_each(F f) const {
    for_each_loaded(
        splits * kMaxK, [&](int i) { return i % kMaxK < k ? __ldcg(keys + i) : kNoKey; }, f);
  }
};

// The floor (in ordered bits) that a logit of the chunk must reach to survive: the k-th
// largest of the threads' maxima, or a little below it (the bottom of a bin that holds it
// and at most k + kFloorSlack maxima in all). Those k maxima reach it, so the chunk's k
// largest do too, and few other logits do: for smooth data about k + k/8 in all.
__device__ __forceinline__ uint32_t chunk_floor(uint32_t max_bits, int n, int k, SelectShared& sh) {
  const OneKey maxima{max_bits != 0 ? (Key(max_bits) << 32) | Key(~uint32_t(threadIdx.x)) : kNoKey};
  const Range r = key_range(maxima, sh);
  if (n <= kGatherCap || r.n < k) return 0;  // every logit survives
  return uint32_t(narrow(maxima, r, k, k + kFloorSlack, sh) >> 32);
}

// --- the kernel ----------------------------------------------------------------------------

// grid (splits, B), 256 threads. Chunk s of row b is [s * chunk, min(V, (s + 1) * chunk)),
// chunk <= 256 * kSlots and chunk % 4 == 0.
template <int kSlots, bool kVector>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    radix_topk_kernel(const float* __restrict__ x, float* __restrict__ values, int32_t* __restrict__ indices, int V,
                      int k, int chunk, bool probabilities, bool with_stats, Workspace ws) {
  __shared__ SelectShared sh;
  __shared__ Stats stats_area[kWarps];
  __shared__ bool last;

  const int s = blockIdx.x, b = blockIdx.y, splits = gridDim.x;
  const int warp = threadIdx.x / 32;
  const float* row = x + size_t(b) * V;
  const int begin = min(V, s * chunk), end = min(V, begin + chunk);
  float* row_values = values + size_t(b) * k;
  int32_t* row_indices = indices + size_t(b) * k;

  // 1. The chunk into registers; its (m, s).
  float v[kSlots];
  load_chunk<kSlots, kVector>(row, begin, end, v);
  Stats mine;
  if (with_stats) {
    Stats st;
    add_values(st, v);
    mine = block_stats<kWarps>(st, stats_area);
  }

  // 2. Logits to ordered bits, in place of the floats.
  ChunkInRegisters<kSlots, kVector> chunk_keys;
  chunk_keys.set(v, begin, end);

  // 3. The chunk's top k: the logits that reach the floor, ranked. If too many tie at the
  // floor, the radix select proper, over the chunk read again.
  const uint32_t floor_bits = chunk_floor(chunk_keys.max_bits, end - begin, k, sh);
  start_survivors(k, sh);
  chunk_keys.keep_from(floor_bits, sh);
  if (!rank_survivors(k, sh)) {
    const ChunkInMemory again{row, begin, end};
    select_top_k(again, key_range(again, sh), k, sh);
  }

  if (splits == 1) {  // the whole row was ours
    if (warp == 0) write_result(sh, row, row_values, row_indices, k, probabilities, mine);
    if (threadIdx.x == 0 && with_stats) ws.row_stats[b] = make_float2(mine.m, mine.s);
    return;
  }

  // 4. Publish the partial result; the writes are fenced before the counter moves.
  Key* partial = ws.keys + (size_t(b) * kMaxSplits + s) * kMaxK;
  for (int i = threadIdx.x; i < k; i += kThreads) partial[i] = sh.top[i];
  if (threadIdx.x == 0) ws.stats[size_t(b) * kMaxSplits + s] = make_float2(mine.m, mine.s);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&ws.counters[b], 1u) == unsigned(splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();  // every other CTA's partial result is visible from here on

  // 5. The last CTA of the row: the top k of the published keys, by the same radix select.
  const PublishedKeys lists{ws.keys + size_t(b) * kMaxSplits * kMaxK, splits, k};
  select_top_k(lists, key_range(lists, sh), k, sh);

  Stats all;
  if (with_stats) {
    Stats part;
    for (int p = threadIdx.x; p < splits; p += kThreads) {
      const float2 q = __ldcg(ws.stats + size_t(b) * kMaxSplits + p);
      part = merge(part, Stats{q.x, q.y});
    }
    all = block_stats<kWarps>(part, stats_area);
  }
  if (warp == 0) write_result(sh, row, row_values, row_indices, k, probabilities, all);
  finish_row(ws, b, with_stats, all);
}

// --- the launch configuration ----------------------------------------------------------------

// CTAs per row for a CTA of 256 x slots logits.
int64_t splits_for(int64_t V, int64_t slots) { return (V + kThreads * slots - 1) / (kThreads * slots); }

// One knob: logits per thread. Big CTAs (32) mean few partial lists to merge; small ones (4)
// mean many CTAs, which a small batch needs to keep the SMs busy.
wb::tune::Space make_space(const std::string& op) {
  wb::tune::Space s;
  s.name = "ch07_radix_" + op;
  s.params = {{"slots", {4, 8, 16, 32}, "logits per thread (a CTA holds 256 x slots)"}};
  s.dims = {"B", "V"};
  s.problem = [](const wb::tune::Config& c, const wb::Shape& shape) -> std::optional<std::string> {
    if (splits_for(shape["V"], c["slots"]) > kMaxSplits) return "a row would need more than kMaxSplits CTAs";
    return std::nullopt;
  };
  // The largest CTAs that still give at least two CTAs per SM in total; at batch 1, as
  // many CTAs per row as the workspace allows.
  s.heuristic = [](const wb::Shape& shape, const wb::tune::Facts& gpu) {
    const int64_t B = shape["B"], V = shape["V"];
    int64_t slots = 32;
    for (int64_t try_slots : {32, 16, 8, 4}) {
      if (splits_for(V, try_slots) > kMaxSplits) break;
      slots = try_slots;
      if (B * splits_for(V, try_slots) >= 2 * std::max(gpu.sms, 1)) break;
    }
    return wb::tune::Config({{"slots", slots}});
  };
  return s;
}

template <int kSlots>
void launch_slots(dim3 grid, const float* x, float* values, int32_t* indices, int V, int k, int chunk,
                  bool probabilities, bool with_stats, const Workspace& ws, bool vector, cudaStream_t stream) {
  if (vector) {
    radix_topk_kernel<kSlots, true>
        <<<grid, kThreads, 0, stream>>>(x, values, indices, V, k, chunk, probabilities, with_stats, ws);
  } else if constexpr (kSlots <= kMaxScalarSlots) {
    radix_topk_kernel<kSlots, false>
        <<<grid, kThreads, 0, stream>>>(x, values, indices, V, k, chunk, probabilities, with_stats, ws);
  } else {
    throw std::logic_error("the scalar kernel holds at most kMaxScalarSlots logits a thread");
  }
}

void launch(const wb::tune::Space& space, const float* x, float* probs, float* values, int32_t* indices, int B, int V,
            int k, bool probabilities, void* workspace, cudaStream_t stream) {
  require_valid(B, V, k);
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  int slots = static_cast<int>(wb::tune::choose(space, wb::Shape{{"B", B}, {"V", V}})["slots"]);
  if (!vector) slots = std::min(slots, kMaxScalarSlots);
  const int splits = static_cast<int>(splits_for(V, slots));
  if (splits > kMaxSplits) throw std::invalid_argument("slots = " + std::to_string(slots) + " is too few for V");
  // each chunk holds at most 256 * slots logits (splits_for)
  launch_split_row(
      x, probs, B, V, splits, probabilities, vector, workspace, stream,
      [&](dim3 grid, int chunk, bool with_stats, const Workspace& ws) {
        const bool built = wb::with_constant<4, 8, 16, 32>(slots, [&](auto n) {
          launch_slots<n.value>(grid, x, values, indices, V, k, chunk, probabilities, with_stats, ws, vector, stream);
        });
        if (!built) {
          throw std::invalid_argument("slots = " + std::to_string(slots) + " is not built (4, 8, 16 or 32)");
        }
      });
}

}  // namespace

CH07_SPLIT_STEP(radix, make_space, launch)

}  // namespace ch07::solution
