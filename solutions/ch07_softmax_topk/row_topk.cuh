// The building blocks of chapter 7's solutions: the online softmax pair, one 64-bit key per
// logit that orders the chapter's way, and a warp's sorted top-k list in registers.
// The split steps (v4, v5) also take their per-op tunable spaces from here (FormSpaces).
//
// Keys. The order is "larger logit first, equal logits by lower index". Both fit in one
// unsigned 64-bit number, so that plain integer comparison IS that order:
//
//   key = ordered(x) << 32 | (~index & 0xffffffff)
//
// ordered(x) maps a float to a uint32 in the same order (negative floats have their bits
// flipped, positive ones their sign bit set), -0 counted as +0; ~index makes the lower index
// the larger key. Every real key is above 0x007fffff'00000000 (-inf's), so 0 means "empty".
//
// Warp lists. A warp keeps the best N = 64 keys it has seen, sorted from the largest down,
// spread over its lanes: slot i lives in register i / 32 of lane i % 32. Sorting and merging
// are bitonic networks whose compare-exchanges pair lane l with lane l ^ stride
// (__shfl_xor_sync), or register 0 with register 1 for stride 32.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "device/math.cuh"
#include "runtime/launch_helpers.cuh"
#include "runtime/errors.cuh"
#include "tune/tune.h"

namespace ch07::solution {

using Key = unsigned long long;
inline constexpr Key kNoKey = 0;
inline constexpr unsigned kFull = 0xffffffffu;
inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr int kListRegs = 2;           // registers per lane
inline constexpr int kList = 32 * kListRegs;  // N = 64 >= kMaxK slots per warp

__device__ __forceinline__ uint32_t ordered_bits(float x) {
  const uint32_t u = __float_as_uint(__fadd_rn(x, 0.0f));  // -0 + 0 = +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// The logit back from its ordered bits (+0 for -0, which ordered_bits merged with +0).
__device__ __forceinline__ float from_ordered_bits(uint32_t u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

__device__ __forceinline__ Key make_key(float x, int index) {
  return (Key(ordered_bits(x)) << 32) | Key(~uint32_t(index));
}

__device__ __forceinline__ int key_index(Key k) { return int(~uint32_t(k & 0xffffffffu)); }

// --- the online softmax pair ---------------------------------------------------------------

// m: the largest logit seen; s: the sum of exp(x - m) over the logits seen. (-inf, 0) is
// "nothing but masked logits so far".
struct Stats {
  float m = -INFINITY;
  float s = 0.0f;
};

__device__ __forceinline__ float exp_rel(float x, float m) { return exp2f((x - m) * kLog2e); }

using wb::fast_exp2;  // 2^x on the special-function unit: harness/device/math.cuh

__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.s * exp_rel(a.m, m) + b.s * exp_rel(b.m, m)};
}

// Adds n values (a thread's batch) to the pair: one rescale for the batch, one exp each.
template <int n>
__device__ __forceinline__ void add_values(Stats& st, const float (&x)[n]) {
  float bm = st.m;
#pragma unroll
  for (int i = 0; i < n; ++i) bm = fmaxf(bm, x[i]);
  if (bm == -INFINITY) return;
  float s = st.s * exp_rel(st.m, bm);
#pragma unroll
  for (int i = 0; i < n; ++i) s += exp_rel(x[i], bm);
  st = {bm, s};
}

__device__ __forceinline__ Stats warp_merge(Stats st) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Stats other{__shfl_xor_sync(kFull, st.m, o), __shfl_xor_sync(kFull, st.s, o)};
    st = merge(st, other);
  }
  return st;
}

// The probability of logit x in a row whose pair is (M, S); 0 for a row of -inf only.
__device__ __forceinline__ float probability(float x, Stats row) {
  return row.s > 0.0f ? exp_rel(x, row.m) / row.s : 0.0f;
}

// --- warp lists ----------------------------------------------------------------------------

__device__ __forceinline__ Key kmax(Key a, Key b) { return a > b ? a : b; }
__device__ __forceinline__ Key kmin(Key a, Key b) { return a < b ? a : b; }

// One compare-exchange step over the 64 slots: slot i meets slot i ^ stride; the lower
// slot keeps the larger key where `descending(i)`, the smaller one elsewhere.
template <class Desc>
__device__ __forceinline__ void exchange(Key (&v)[kListRegs], int stride, Desc descending) {
  const int lane = threadIdx.x & 31;
  if (stride == 32) {  // register 0 (slot lane) meets register 1 (slot lane + 32)
    const bool d = descending(lane);
    const Key hi = kmax(v[0], v[1]), lo = kmin(v[0], v[1]);
    v[0] = d ? hi : lo;
    v[1] = d ? lo : hi;
    return;
  }
#pragma unroll
  for (int r = 0; r < kListRegs; ++r) {
    const int i = r * 32 + lane;
    const Key other = __shfl_xor_sync(kFull, v[r], stride);
    const bool lower = (lane & stride) == 0;
    v[r] = (lower == descending(i)) ? kmax(v[r], other) : kmin(v[r], other);
  }
}

// Sorts the 64 slots from the largest key down (a full bitonic sort: 21 steps).
__device__ __forceinline__ void sort_desc(Key (&v)[kListRegs]) {
#pragma unroll
  for (int size = 2; size <= kList; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      exchange(v, stride, [size](int i) { return (i & size) == 0; });
    }
  }
}

// list := the 64 largest of list and other, sorted; both must be sorted from the largest
// down. max(list[i], other[63 - i]) holds the 64 largest as a bitonic sequence, which six
// exchange steps sort.
__device__ __forceinline__ void merge_into(Key (&list)[kListRegs], const Key (&other)[kListRegs]) {
#pragma unroll
  for (int r = 0; r < kListRegs; ++r) {
    // slot 63 - i is register (1 - r) of lane 31 - lane
    const Key mirrored = __shfl_xor_sync(kFull, other[kListRegs - 1 - r], 31);
    list[r] = kmax(list[r], mirrored);
  }
#pragma unroll
  for (int stride = kList / 2; stride > 0; stride >>= 1) {
    exchange(list, stride, [](int) { return true; });
  }
}

// Slot i of a warp list (every lane gets it).
__device__ __forceinline__ Key slot(const Key (&v)[kListRegs], int i) {
  const Key r = (i / 32 == 0) ? v[0] : v[1];
  return __shfl_sync(kFull, r, i % 32);
}

// A warp's list with a staging area in shared memory: candidates above the threshold are
// appended to `stage` (one ballot per batch of 32), and when it would overflow they are
// sorted and merged into the list in one go, which is far cheaper than inserting each.
struct WarpTopK {
  Key list[kListRegs] = {kNoKey, kNoKey};
  Key* stage;              // kList keys of shared memory, this warp's own
  int staged = 0;          // warp-uniform
  Key threshold = kNoKey;  // a key must be ABOVE it to matter (warp-uniform)
  Key* shared;             // the block's floor: the largest of the warps' thresholds (shared memory)
  int k;

  __device__ WarpTopK(Key* stage_area, Key* block_threshold, int k_)
      : stage(stage_area), shared(block_threshold), k(k_) {}

  // Every lane calls this with its candidate (kNoKey for none); warp-uniform control flow.
  __device__ __forceinline__ void offer(Key key) {
    const bool take = key > threshold;
    const unsigned ballot = __ballot_sync(kFull, take);
    if (ballot == 0) return;
    const int n = __popc(ballot);
    if (staged + n > kList) flush();
    if (take) stage[staged + __popc(ballot & ((1u << (threadIdx.x & 31)) - 1u))] = key;
    staged += n;
  }

  // Sorts the staged keys and merges them into the list; the k-th best becomes the
  // threshold (still kNoKey while fewer than k keys were seen).
  __device__ __forceinline__ void flush() {
    __syncwarp();
    const int lane = threadIdx.x & 31;
    Key s[kListRegs];
#pragma unroll
    for (int r = 0; r < kListRegs; ++r) s[r] = (r * 32 + lane < staged) ? stage[r * 32 + lane] : kNoKey;
    __syncwarp();
    staged = 0;
    sort_desc(s);
    merge_into(list, s);
    threshold = kmax(threshold, slot(list, k - 1));
    if ((threadIdx.x & 31) == 0 && threshold != kNoKey) atomicMax(shared, threshold);
  }

  // Another warp's k-th best is a floor for everyone: keys are unique, so a key below it
  // has k keys above it in the block already.
  __device__ __forceinline__ void read_floor() {
    const Key floor = *reinterpret_cast<const volatile Key*>(shared);
    threshold = kmax(threshold, __shfl_sync(kFull, floor, 0));  // one value for the whole warp
  }
};

// The block's lists merged into warp 0's: each warp writes its list to `area` (kList keys
// per warp), then a tree of merges halves the lists each round. `list` of warp 0 holds the
// result; the other warps' lists are left undefined.
template <int kWarps>
__device__ __forceinline__ void block_merge(Key (&list)[kListRegs], Key* area) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < kListRegs; ++r) area[warp * kList + r * 32 + lane] = list[r];
  __syncthreads();
#pragma unroll
  for (int step = 1; step < kWarps; step <<= 1) {
    if (warp % (2 * step) == 0 && warp + step < kWarps) {
      Key other[kListRegs];
#pragma unroll
      for (int r = 0; r < kListRegs; ++r) other[r] = area[(warp + step) * kList + r * 32 + lane];
      merge_into(list, other);
#pragma unroll
      for (int r = 0; r < kListRegs; ++r) area[warp * kList + r * 32 + lane] = list[r];
    }
    __syncthreads();
  }
}

// The block's pairs merged; every thread gets the result.
template <int kWarps>
__device__ __forceinline__ Stats block_stats(Stats st, Stats* area) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  st = warp_merge(st);
  if (lane == 0) area[warp] = st;
  __syncthreads();
  Stats all = area[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) all = merge(all, area[w]);
  __syncthreads();  // `area` may be reused
  return all;
}

// Warp 0 writes the row's result from its merged list: the k best indices and, as values,
// the logits themselves (read back from the row, bits and all) or their probabilities.
__device__ __forceinline__ void write_topk(const Key (&list)[kListRegs], const float* row, float* values,
                                           int32_t* indices, int k, bool probabilities, Stats all) {
#pragma unroll
  for (int r = 0; r < kListRegs; ++r) {
    const int i = r * 32 + (threadIdx.x & 31);
    if (i < k) {
      const int index = key_index(list[r]);
      const float x = row[index];
      values[i] = probabilities ? probability(x, all) : x;
      indices[i] = index;
    }
  }
}

// Loads of logits the chip need not keep in L1: each is read once (the streaming hint).
__device__ __forceinline__ float4 load_stream(const float* p) { return __ldcs(reinterpret_cast<const float4*>(p)); }

// One CTA scans x[begin, end) of a row: every logit is offered to the thread's warp list
// and, when `with_stats`, added to the thread's online pair. kVec float4s (or, when
// !kVector, groups of 4 floats) per thread per batch; the batch loop is uniform across the
// CTA, so every lane of a warp reaches every ballot. kVector needs begin and end % 4 == 0
// and a 16-byte-aligned row.
template <int kThreads, int kVec, bool kVector>
__device__ __forceinline__ void scan_chunk(const float* __restrict__ row, int begin, int end, bool with_stats,
                                           WarpTopK& top, Stats& st) {
  constexpr int kBatch = 4 * kThreads * kVec;  // logits per CTA per batch
  for (int base = begin; base < end; base += kBatch) {
    float x[4 * kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const int at = base + 4 * (threadIdx.x + j * kThreads);  // 4 consecutive logits
      if constexpr (kVector) {
        float4 q = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        if (at < end) q = load_stream(row + at);
        x[4 * j] = q.x, x[4 * j + 1] = q.y, x[4 * j + 2] = q.z, x[4 * j + 3] = q.w;
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c) x[4 * j + c] = (at + c < end) ? __ldcs(row + at + c) : -INFINITY;
      }
    }
    if (with_stats) add_values(st, x);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const int at = base + 4 * (threadIdx.x + j * kThreads);
#pragma unroll
      for (int c = 0; c < 4; ++c) top.offer(at + c < end ? make_key(x[4 * j + c], at + c) : kNoKey);
    }
    top.read_floor();
  }
  top.flush();
}

// The full-probability form's second kernel (v4 and v5), grid (ceil(V / (4 * 256)), B):
// probs = exp(x - M) / S with the row's (M, S) pair from the workspace.
template <bool kVector>
__global__ void __launch_bounds__(256)
    probs_kernel(const float* __restrict__ x, float* __restrict__ probs, int V, const float2* __restrict__ row_stats) {
  const int b = blockIdx.y;
  const float2 q = row_stats[b];
  const Stats all{q.x, q.y};
  const size_t off = size_t(b) * V;
  const int v = 4 * (blockIdx.x * 256 + threadIdx.x);
  if constexpr (kVector) {
    if (v < V) {
      const float4 in = load_stream(x + off + v);
      *reinterpret_cast<float4*>(probs + off + v) =
          make_float4(probability(in.x, all), probability(in.y, all), probability(in.z, all), probability(in.w, all));
    }
  } else {
    for (int c = 0; c < 4; ++c) {
      if (v + c < V) probs[off + v + c] = probability(x[off + v + c], all);
    }
  }
}

// Launches probs_kernel; `vector` says x's rows allow float4 loads (V % 4 == 0, x aligned).
inline void launch_probs(const float* x, float* probs, int B, int V, bool vector, const float2* row_stats,
                         cudaStream_t stream) {
  const dim3 grid((V + 4 * 256 - 1) / (4 * 256), B);
  if (vector && reinterpret_cast<uintptr_t>(probs) % 16 == 0) {
    probs_kernel<true><<<grid, 256, 0, stream>>>(x, probs, V, row_stats);
  } else {
    probs_kernel<false><<<grid, 256, 0, stream>>>(x, probs, V, row_stats);
  }
  CUDA_CHECK(cudaGetLastError());
}

// --- the tunable spaces of a split step (v4, v5) --------------------------------------------

// One step's tunable space for each of the three top-k forms, built by make(op) in the
// order topk, softmax_topk, softmax_topk_probs; of(op) is the one for op.
class FormSpaces {
 public:
  template <class Make>
  explicit FormSpaces(Make make)
      : topk_(make("topk")), softmax_topk_(make("softmax_topk")), probs_(make("softmax_topk_probs")) {}

  const wb::tune::Space& of(const char* op) const {
    const std::string o = op;
    if (o == "topk") return topk_;
    if (o == "softmax_topk") return softmax_topk_;
    if (o == "softmax_topk_probs") return probs_;
    throw std::logic_error("no tunable space for op '" + o + "'");
  }

 private:
  wb::tune::Space topk_, softmax_topk_, probs_;
};

}  // namespace ch07::solution
