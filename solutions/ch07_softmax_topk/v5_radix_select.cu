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
#include "row_topk.cuh"
#include "split_common.cuh"
#include "tune/choose.cuh"

namespace ch07::solution {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kDigitBits = 11;                    // bits counted per pass
constexpr int kBins = 1 << kDigitBits;            // 2048 counters in shared memory
constexpr int kBinsPerThread = kBins / kThreads;  // 8: the bins one thread scans
constexpr int kGatherCap = 128;                   // survivors ranked at the end, >= kMaxK
constexpr int kFloorSlack = 8;                    // see chunk_floor
constexpr int kMinBlocks = 4;                     // CTAs per SM: at most 64 registers a thread
constexpr int kMaxScalarSlots = 16;               // 32 scalar loads a thread do not fit in 64
static_assert(kGatherCap >= kMaxK, "the survivors must hold the k best");
static_assert(kBins % kThreads == 0, "every thread scans the same number of bins");

// A key whose logit half is 0 is an empty slot (kNoKey is one): every logit's ordered bits
// are at least 0x007fffff (-inf's), so every real key is at least 2^32.
__device__ __forceinline__ bool is_real(Key key) { return key >= (Key(1) << 32); }

// --- radix select: the k largest of the keys a CTA holds ------------------------------------

struct SelectShared {
  Key survivors[kGatherCap];  // the keys left at the end, in no order
  Key top[kMaxK];             // the result: the k largest, sorted from the largest down
  Key range_lo, range_hi;     // key_range's answer
  int range_n;
  int hist[kBins];  // one pass's counts
  int warp_sums[kWarps];
  int survivor_count;
  int digit, above, in_bin;  // one pass's verdict (see find_digit)
};

// The bits of a key at positions >= s (s = 64: none).
__device__ __forceinline__ Key high_mask(int s) { return s >= 64 ? Key(0) : ~Key(0) << s; }

// The sum of v over the threads after this one (threadIdx.x + 1, ..., kThreads - 1).
__device__ __forceinline__ int sum_after(int v, int* warp_sums) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  int inclusive = v;  // v + the lanes above in this warp
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int t = __shfl_down_sync(kFull, inclusive, o);
    if (lane + o < 32) inclusive += t;
  }
  if (lane == 0) warp_sums[warp] = inclusive;
  __syncthreads();
  int after = inclusive - v;
  for (int w = warp + 1; w < kWarps; ++w) after += warp_sums[w];
  return after;
}

// hist holds this pass's counts. Finds the bin d that holds the need-th largest key:
// (keys in bins above d) < need <= (keys in bins d and above). Thread t owns bins
// [8t, 8t + 8); the one whose range holds the crossing walks it down and writes the verdict.
__device__ __forceinline__ void find_digit(SelectShared& sh, int need) {
  const int first = threadIdx.x * kBinsPerThread;
  int count[kBinsPerThread], mine = 0;
#pragma unroll
  for (int i = 0; i < kBinsPerThread; ++i) {
    count[i] = sh.hist[first + i];
    mine += count[i];
  }
  int above = sum_after(mine, sh.warp_sums);
  if (above < need && need <= above + mine) {
#pragma unroll
    for (int i = kBinsPerThread - 1; i >= 0; --i) {
      if (above + count[i] >= need) {
        sh.digit = first + i, sh.above = above, sh.in_bin = count[i];
        break;
      }
      above += count[i];
    }
  }
  __syncthreads();
}

struct Range {
  Key lo, hi;  // the smallest and the largest real key
  int n;       // how many real keys
};

// The range of the CTA's real keys. `keys` hands each thread's keys to a function:
// keys.for_each(f) calls f(key) for each (an empty key for an empty slot).
template <class Keys>
__device__ __forceinline__ Range key_range(const Keys& keys, SelectShared& sh) {
  if (threadIdx.x == 0) sh.range_lo = ~Key(0), sh.range_hi = kNoKey, sh.range_n = 0;
  __syncthreads();
  Key lo = ~Key(0), hi = kNoKey;
  int n = 0;
  keys.for_each([&](Key key) {
    if (is_real(key)) lo = kmin(lo, key), hi = kmax(hi, key), ++n;
  });
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    lo = kmin(lo, __shfl_xor_sync(kFull, lo, o));
    hi = kmax(hi, __shfl_xor_sync(kFull, hi, o));
    n += __shfl_xor_sync(kFull, n, o);
  }
  if ((threadIdx.x & 31) == 0 && n > 0) {
    atomicMin(&sh.range_lo, lo), atomicMax(&sh.range_hi, hi), atomicAdd(&sh.range_n, n);
  }
  __syncthreads();
  const Range r{sh.range_lo, sh.range_hi, sh.range_n};
  __syncthreads();  // read by all before the next call resets them
  return r;
}

// The radix passes. Returns a floor such that the k largest keys are >= floor, and at most
// `stop_at` real keys are (stop_at >= k). Keys are unique; the real ones lie in r.
//
// The state of the search: `prefix` holds the bits decided so far (above `shift`), which
// name one bin; `taken` keys are above that bin (they are in), `in_bin` keys are in it, and
// everything below it is out. A pass counts the keys of the bin by their next 11 bits and
// keeps the sub-bin that holds the (k - taken)-th largest of them. Once every bit is decided
// the bin holds one key, so the loop ends (at most 6 passes).
template <class Keys>
__device__ __forceinline__ Key narrow(const Keys& keys, Range r, int k, int stop_at, SelectShared& sh) {
  // Every key has the same bits as lo and hi above their highest differing bit: the first
  // pass starts below it (all-equal logits: in the index bits; logits near 1e4: in the
  // mantissa), which spreads the keys over many bins instead of piling them into one.
  int shift = r.lo == r.hi ? 0 : 64 - __clzll(r.lo ^ r.hi);
  Key prefix = r.hi & high_mask(shift);
  int taken = 0, in_bin = r.n;
  while (taken + in_bin > stop_at) {  // the same on every thread
    const Key decided = high_mask(shift);
    const int bits = min(kDigitBits, shift);
    shift -= bits;
    for (int i = threadIdx.x; i < kBins; i += kThreads) sh.hist[i] = 0;
    __syncthreads();
    keys.for_each([&](Key key) {
      if (is_real(key) && (key & decided) == prefix) {
        atomicAdd(&sh.hist[unsigned(key >> shift) & ((1u << bits) - 1u)], 1);
      }
    });
    __syncthreads();
    find_digit(sh, k - taken);
    prefix |= Key(sh.digit) << shift;
    taken += sh.above;
    in_bin = sh.in_bin;
    // The next pass writes hist and the verdict only after two more barriers.
  }
  return prefix;  // the bottom of the bin: the keys >= it are those above it and in it
}

// Survivors: the few keys left for the final ranking. start_survivors empties the list and
// sets sh.top to kNoKey; keep() appends (counting on past kGatherCap, so that an overflow
// shows); rank_survivors() puts the k largest into sh.top, in order, unless there were too
// many to hold (then it returns false and leaves sh.top alone).
__device__ __forceinline__ void start_survivors(int k, SelectShared& sh) {
  if (threadIdx.x == 0) sh.survivor_count = 0;
  for (int i = threadIdx.x; i < k; i += kThreads) sh.top[i] = kNoKey;
  __syncthreads();
}

__device__ __forceinline__ void keep(Key key, SelectShared& sh) {
  const int at = atomicAdd(&sh.survivor_count, 1);
  if (at < kGatherCap) sh.survivors[at] = key;
}

// A survivor's place in the output is the number of survivors larger than it: no sort.
__device__ __forceinline__ bool rank_survivors(int k, SelectShared& sh) {
  __syncthreads();
  const int m = sh.survivor_count;
  if (m > kGatherCap) return false;  // the same on every thread
  for (int i = threadIdx.x; i < m; i += kThreads) {
    const Key mine = sh.survivors[i];
    int rank = 0;
    for (int j = 0; j < m; ++j) rank += sh.survivors[j] > mine;  // one broadcast read each
    if (rank < k) sh.top[rank] = mine;
  }
  __syncthreads();
  return true;
}

// Sets sh.top[0, k) to the k largest keys the CTA holds, sorted from the largest down
// (kNoKey after the n-th if there are fewer). Called by the whole CTA.
template <class Keys>
__device__ __forceinline__ void select_top_k(const Keys& keys, Range r, int k, SelectShared& sh) {
  const Key floor = narrow(keys, r, k, kGatherCap, sh);
  start_survivors(k, sh);
  keys.for_each([&](Key key) {
    if (is_real(key) && key >= floor) keep(key, sh);
  });
  rank_survivors(k, sh);  // at most kGatherCap: narrow saw to it
}

// --- where the keys come from -----------------------------------------------------------------

// Which logit of the chunk a thread's slot j holds. Vector: slots 4g .. 4g + 3 are one float4,
// and a warp's float4s are consecutive. Scalar: a warp's loads are consecutive floats.
template <bool kVector>
__device__ __forceinline__ int slot_index(int begin, int j) {
  if constexpr (kVector) return begin + 4 * (threadIdx.x + (j / 4) * kThreads) + j % 4;
  return begin + threadIdx.x + j * kThreads;
}

// The chunk [begin, end) into registers, -inf past its end. Every load is issued before any
// is used. kVector needs begin % 4 == 0, end % 4 == 0 and a 16-byte-aligned row.
template <int kSlots, bool kVector>
__device__ __forceinline__ void load_chunk(const float* __restrict__ row, int begin, int end, float (&v)[kSlots]) {
  if constexpr (kVector) {
    static_assert(kSlots % 4 == 0, "whole float4s");
#pragma unroll
    for (int g = 0; g < kSlots / 4; ++g) {
      const int at = slot_index<true>(begin, 4 * g);
      float4 q = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      if (at < end) q = load_stream(row + at);
      v[4 * g] = q.x, v[4 * g + 1] = q.y, v[4 * g + 2] = q.z, v[4 * g + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      const int at = slot_index<false>(begin, j);
      v[j] = at < end ? __ldcs(row + at) : -INFINITY;
    }
  }
}

// A thread's part of the chunk, in registers as ordered bits (0 for a slot past the end).
// Its keys are built as make_key builds them, ordered bits << 32 | ~index, and only for the
// few logits that reach the floor: the index half is never held for all of them.
template <int kSlots, bool kVector>
struct ChunkInRegisters {
  uint32_t bits[kSlots];
  uint32_t max_bits;  // the largest of bits[]
  int begin;

  __device__ __forceinline__ void keep_from(uint32_t floor_bits, SelectShared& sh) const {
    if (max_bits == 0 || max_bits < floor_bits) return;  // most threads hold no survivor
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {  // fully unrolled: bits[] stays in registers
      if (bits[j] != 0 && bits[j] >= floor_bits) {
        keep((Key(bits[j]) << 32) | Key(~uint32_t(slot_index<kVector>(begin, j))), sh);
      }
    }
  }
};

// One key per thread (its largest logit's).
struct OneKey {
  Key key;
  template <class F>
  __device__ __forceinline__ void for_each(F f) const {
    f(key);
  }
};

// Calls f(load(i)) for this thread's i = threadIdx.x, + 256, ... < count; 8 loads are issued
// before any is used, so that they are in flight together.
template <class Load, class F>
__device__ __forceinline__ void for_each_loaded(int count, Load load, F f) {
  constexpr int kBatch = 8;
  for (int first = threadIdx.x; first < count; first += kBatch * kThreads) {
    Key key[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = first + u * kThreads;
      key[u] = i < count ? load(i) : kNoKey;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) f(key[u]);
  }
}

// The chunk read again from memory, for the rare chunk whose floor lets too many through.
struct ChunkInMemory {
  const float* row;
  int begin, end;
  template <class F>
  __device__ __forceinline__ void for_each(F f) const {
    for_each_loaded(
        end - begin, [&](int i) { return make_key(__ldcg(row + begin + i), begin + i); }, f);
  }
};

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

// warp 0 writes the row's result from sh.top (write_topk of row_topk.cuh).
__device__ __forceinline__ void write_result(const SelectShared& sh, const float* row, float* values, int32_t* indices,
                                             int k, bool probabilities, Stats all) {
  Key list[kListRegs];
#pragma unroll
  for (int r = 0; r < kListRegs; ++r) {
    const int i = r * 32 + (threadIdx.x & 31);
    list[r] = i < k ? sh.top[i] : kNoKey;
  }
  write_topk(list, row, values, indices, k, probabilities, all);
}

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
  chunk_keys.begin = begin;
  chunk_keys.max_bits = 0;
#pragma unroll
  for (int j = 0; j < kSlots; ++j) {
    chunk_keys.bits[j] = slot_index<kVector>(begin, j) < end ? ordered_bits(v[j]) : 0u;
    chunk_keys.max_bits = max(chunk_keys.max_bits, chunk_keys.bits[j]);
  }

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
