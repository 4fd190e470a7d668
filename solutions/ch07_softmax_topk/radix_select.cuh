// The radix select of v5_radix_select.cu (whose header explains it), shared by the steps that
// use it (v5, v6, v7): a CTA of 256 threads finds the k largest of the keys it holds by counting
// their digits in a shared-memory histogram; the keys come from registers (a chunk of a row),
// from memory (the same chunk read again), or from any other source with a for_each.
//
//   SelectShared          the CTA's shared state: histogram, survivors, result
//   key_range, narrow     the range of the keys; the radix passes down to a floor
//   start_survivors, keep, rank_survivors, select_top_k
//                         the few keys at or above the floor, ranked by counting
//   maximum_key, floor_of_maxima, rank_by_count
//                         v8: a row's floor from 128 warp maxima, and a short list ranked
//   load_chunk, ChunkInRegisters, OneKey, SharedKeys, ChunkInMemory
//                         where the keys come from
//   write_result          warp 0 writes the k keys in sh.top as the row's result
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "ch07.cuh"
#include "row_topk.cuh"

namespace ch07::solution {
namespace {  // internal to each step's file, like its kernels

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

// --- counting instead of selecting: few keys ------------------------------------------------

// Rows cut into 128 warps (v8: 16 CTAs or blocks of 8 warps) publish each warp's largest logit
// as a unique 32-bit key: its ordered bits with the low 7 bits replaced by the warp's place.
// The k-th largest of those keys, place bits cleared, is a floor for the row (k warps each hold
// a logit at or above it) that few more than k logits reach.
constexpr int kMaxima = 128;
constexpr uint32_t kPlaceBits = kMaxima - 1;
constexpr int kRankCap = kThreads - 32;  // keys ranked by counting (rank_by_count), at most
static_assert(kThreads == 2 * kMaxima, "two threads count for each maximum");
static_assert(kMaxima >= kMaxK, "the k-th largest maximum exists");

__device__ __forceinline__ uint32_t maximum_key(uint32_t max_bits, int place) {
  return (max_bits & ~kPlaceBits) | uint32_t(place);
}

// The floor from keys[0, 128) (unique, in shared memory, 8-byte aligned): thread t counts the
// keys above key t % 128 in half t / 128 of the list; after the barrier, the one thread of the
// first half whose key has exactly k - 1 above it calls found(floor). `area`: 128 ints.
template <class Found>
__device__ __forceinline__ void floor_of_maxima(const uint32_t* keys, int k, int* area, Found found) {
  const int i = threadIdx.x % kMaxima, h = threadIdx.x / kMaxima;
  const uint32_t mine = keys[i];
  const uint2* half = reinterpret_cast<const uint2*>(keys + h * (kMaxima / 2));
  int above = 0;
#pragma unroll
  for (int q = 0; q < kMaxima / 4; ++q) {
    const uint2 w = half[q];
    above += int(w.x > mine) + int(w.y > mine);
  }
  if (h == 1) area[i] = above;
  __syncthreads();
  if (h == 0 && above + area[i] == k - 1) found(mine & ~kPlaceBits);
}

// Warps 1.. of the CTA (warp 0 is left free): top[0, k) := the k largest of the m unique keys
// s[0, m), m <= kRankCap and m >= k, sorted from the largest down. A key's place is the number
// of keys above it; g threads a key, each counting a g-th of the list, their counts added over
// g neighbouring lanes. The caller's barrier follows.
__device__ __forceinline__ void rank_by_count(const Key* s, int m, int k, Key* top) {
  const int t = int(threadIdx.x) - 32;
  if (t < 0) return;
  const int g = m * 4 <= kRankCap ? 4 : m * 2 <= kRankCap ? 2 : 1;  // the same on every thread
  const int i = t / g, part = t % g;
  const Key mine = i < m ? s[i] : kNoKey;
  int above = 0;
  if (i < m) {
    for (int j = part; j < m; j += g) above += s[j] > mine;
  }
  for (int o = 1; o < g; o <<= 1) above += __shfl_xor_sync(kFull, above, o);
  if (i < m && part == 0 && above < k) top[above] = mine;
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

  // The logits v of the chunk [begin, end), as load_chunk left them, turned into their bits.
  __device__ __forceinline__ void set(const float (&v)[kSlots], int chunk_begin, int end) {
    begin = chunk_begin;
    max_bits = 0;
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      bits[j] = slot_index<kVector>(chunk_begin, j) < end ? ordered_bits(v[j]) : 0u;
      max_bits = max(max_bits, bits[j]);
    }
  }

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

// Keys in this CTA's shared memory: keys[0, n) (v6: the kept maxima; v7: the candidates).
struct SharedKeys {
  const Key* keys;
  int n;
  template <class F>
  __device__ __forceinline__ void for_each(F f) const {
    for (int i = threadIdx.x; i < n; i += kThreads) f(keys[i]);
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

// The chunk read again from memory, for the rare chunk whose floor lets too many through
// (v6: the whole row, for the rare row).
struct ChunkInMemory {
  const float* row;
  int begin, end;

  // The key of the chunk's i-th logit.
  __device__ __forceinline__ Key key(int i) const { return make_key(__ldcg(row + begin + i), begin + i); }

  template <class F>
  __device__ __forceinline__ void for_each(F f) const {
    for_each_loaded(
        end - begin, [&](int i) { return key(i); }, f);
  }
};

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

// The same without the row's round trip for the probabilities (v8): each value comes from the
// key's bits (-0 comes back as +0: the same probability); the top-k form returns the logit
// itself, bits and all, so it reads it. Warp 0.
__device__ __forceinline__ void write_result_from_keys(const SelectShared& sh, const float* row, float* values,
                                                       int32_t* indices, int k, bool probabilities, Stats all) {
#pragma unroll
  for (int r = 0; r < kListRegs; ++r) {
    const int i = r * 32 + (threadIdx.x & 31);
    if (i < k) {
      const Key key = sh.top[i];
      const int index = key_index(key);
      values[i] = probabilities ? probability(from_ordered_bits(uint32_t(key >> 32)), all) : row[index];
      indices[i] = index;
    }
  }
}

}  // namespace

}  // namespace ch07::solution
