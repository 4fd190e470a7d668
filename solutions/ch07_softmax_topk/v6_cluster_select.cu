// v6 — one thread-block cluster per row: the CTAs of a row meet in each other's shared memory.
//
// Over v5: at batch 1 (one row of 128,256 logits) v5 takes 23.2 µs on an H200 while the row's
// bytes need 0.12 µs. The time is latency, and most of it is v5's hand-over: 126 CTAs each
// publish k keys to a global workspace, count themselves in with an atomic, and the last one
// alone selects the top k of 126 x 50 keys read back from L2. Here a row is ONE cluster of up
// to 16 CTAs (compute capability 9.0: the CTAs of a cluster run at the same time on one GPC and
// can read, write and count in each other's shared memory), and the hand-over is two cluster
// barriers and a few thousand stores between SMs:
//
//   1. Load, as v5: each CTA holds its chunk of the row in registers (256 threads x up to 32
//      logits, every load in flight at once) as ordered bits, and each thread knows its
//      largest logit (its "maximum").
//   2. Exchange: every thread writes its maximum into the shared memory of EVERY CTA of the
//      cluster (16 stores a thread); one cluster barrier, during which the CTA computes its
//      (m, s) pair from the bits (for the full-probability form, before it: every CTA then
//      gets every pair).
//   3. A row floor: each CTA, on its own and identically, finds the k-th largest of the row's
//      4,096 thread maxima (a little below it: at most k + 8 maxima reach it) by v5's radix
//      select, from its own shared memory. k logits (those maxima) reach it, so the row's k
//      largest do too; for smooth data few others do (k to k + 8). v5's per-CTA floors would
//      not do: the largest of the 16 CTAs' floors lets 600 to 750 logits through in a
//      simulation of rows drawn from normal(0, 2).
//   4. Gather: each CTA adds its logits that reach the row floor to rank 0's survivor list
//      (a shared-memory atomic in rank 0 for the slot) and arrives at the second barrier;
//      every CTA also merges the 16 pairs into the row's (M, S) and, for the full-probability
//      form, writes its chunk's probabilities from its registers (no second kernel).
//   5. Rank 0 waits, ranks the survivors as v5 does (the place of a key is the number of
//      survivors above it) and writes the k sorted values and indices (probabilities from the
//      keys' bits: no read of the row on the way out). If more than 128 logits reach the row
//      floor (thousands of equal logits), rank 0 runs the radix select proper over the whole
//      row read again from memory: slow, correct, and rare.
//
//   batch 1, V = 128,256:  a cluster of 16 CTAs x 256 threads x 32 logits (131,072 >= V)
//
// No workspace, no atomics in global memory, no second kernel, one launch. Why 16 CTAs and not
// 8 (the portable maximum, which needs no opt-in): 8 CTAs would hold 64 logits a thread, twice
// v5's largest chunk in registers, with half the SMs pulling the row in and twice the serial
// work a thread. The price of 16 is the non-portable opt-in
// (cudaFuncAttributeNonPortableClusterSizeAllowed) and a cluster that must find 16 CTA slots in
// one GPC; the launcher asks the occupancy calculator first.
//
// What it does not serve goes to v5_radix_select, same arguments: a batch whose clusters would
// share SMs (B x CTAs per row > the SM count: B > 8 at V = 128,256 on 132 SMs), rows longer
// than 16 x 256 x 32 = 131,072 logits (16 x 256 x 16 = 65,536 when the row does not allow
// float4 loads), a kernel built for a GPU older than sm_90 or a GPU without clusters, and a
// cluster shape the occupancy calculator says does not fit. Shorter rows get fewer CTAs (a
// power of two, about one per 2,048 logits) and fewer logits a thread.
//
// From radix_select.cuh: the select (key_range, narrow, the survivors and their ranking), the
// chunk in registers, the result's write. From harness/device/cluster.cuh: the cluster's rank,
// its barrier halves, the mapping of a shared address into another CTA (mapa), the launch.
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v6_cluster_select,v5_radix_select
#include <cstdint>

#include "device/cluster.cuh"
#include "ladder.cuh"
#include "radix_select.cuh"
#include "row_topk.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch07::solution {
namespace {

constexpr int kMaxCluster = 16;              // CTAs per row, at most (non-portable above 8)
constexpr int kLogitsPerCta = kThreads * 8;  // the cluster size: one CTA per 2,048 logits
// 32 logits a thread held across both barriers, with the probabilities written after the
// second, do not fit in v5's 64 registers: 3 CTAs an SM (80 registers) for that chunk size.
constexpr int kMinBlocks32 = 3;
static_assert(kMaxCluster <= 32, "warp 0's lanes merge the CTAs' pairs");

// The row's thread maxima, as every CTA of the cluster holds them: bits[i] is the largest
// logit's ordered bits of thread i % 256 of CTA i / 256 (0: it held no logit), keyed by i so
// that the keys are unique in the row.
struct RowMaxima {
  const uint32_t* bits;
  int n;
  template <class F>
  __device__ __forceinline__ void for_each(F f) const {
#pragma unroll 4
    for (int i = threadIdx.x; i < n; i += kThreads) {  // 4 loads in flight, not 1
      const uint32_t b = bits[i];
      f(b != 0 ? (Key(b) << 32) | Key(~uint32_t(i)) : kNoKey);
    }
  }
};

// A floor below the k largest of `keys` that at most k + kFloorSlack of them reach: the
// bottom of the radix select's last bin; 0 (every key) when there are fewer than k.
template <class Keys>
__device__ __forceinline__ Key floor_of(const Keys& keys, int k, SelectShared& sh) {
  const Range r = key_range(keys, sh);
  return r.n < k ? kNoKey : narrow(keys, r, k, k + kFloorSlack, sh);
}

// The (m, s) pair of the logits the CTA holds in registers, from their bits (the floats are
// gone by then); every thread gets it. A thread's m is its maximum, which it has already.
template <int kSlots, bool kVector>
__device__ __forceinline__ Stats chunk_stats(const ChunkInRegisters<kSlots, kVector>& c, Stats* area) {
  Stats st;
  const float m = from_ordered_bits(c.max_bits);
  if (c.max_bits != 0 && m != -INFINITY) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kSlots; ++j) s += c.bits[j] != 0 ? exp_rel(from_ordered_bits(c.bits[j]), m) : 0.0f;
    st = {m, s};
  }
  return block_stats<kWarps>(st, area);
}

// The row's (M, S) from the CTAs' pairs, the same bits in every thread of every CTA: warp
// lanes merge in a fixed order and lane 0's result is taken.
__device__ __forceinline__ Stats row_pair(const Stats* pairs, int n) {
  const int lane = threadIdx.x & 31;
  const Stats st = warp_merge(lane < n ? pairs[lane] : Stats{});
  return {__shfl_sync(kFull, st.m, 0), __shfl_sync(kFull, st.s, 0)};
}

// rank_survivors (radix_select.cuh) for the row's survivors, with kSplit threads on each (so
// at most 256 / kSplit survivors): each counts the survivors above its key among every
// kSplit-th one, and the kSplit counts are summed over neighbouring lanes. The serial loop of
// one thread is kSplit times shorter; it is on the critical path of the row.
template <int kSplit>
__device__ __forceinline__ void rank_split(int m, int k, SelectShared& sh) {
  static_assert(kSplit <= 32 && (kSplit & (kSplit - 1)) == 0, "the lanes of a key are in one warp");
  const int i = threadIdx.x / kSplit, part = threadIdx.x % kSplit;
  const Key mine = i < m ? sh.survivors[i] : kNoKey;
  int rank = 0;
  for (int j = part; j < m; j += kSplit) rank += sh.survivors[j] > mine;
#pragma unroll
  for (int o = 1; o < kSplit; o <<= 1) rank += __shfl_xor_sync(kFull, rank, o);
  if (i < m && part == 0 && rank < k) sh.top[rank] = mine;
}

// Rank 0's ranking: false (sh.top untouched) when more survivors came than the list holds.
__device__ __forceinline__ bool rank_row_survivors(int k, SelectShared& sh) {
  __syncthreads();
  const int m = sh.survivor_count;  // the same on every thread
  if (m > kGatherCap) return false;
  if (m <= kThreads / 4) {
    rank_split<4>(m, k, sh);
  } else {
    rank_split<kThreads / kGatherCap>(m, k, sh);
  }
  __syncthreads();
  return true;
}

// Warp 0 writes the row's result from sh.top. Probabilities come from the keys' own bits (no
// read of the row on the way out); logits are read back from the row, -0 and all (write_result).
__device__ __forceinline__ void write_row_result(const SelectShared& sh, const float* row, float* values,
                                                 int32_t* indices, int k, bool probabilities, Stats all) {
  if (!probabilities) return write_result(sh, row, values, indices, k, false, all);
  for (int i = threadIdx.x & 31; i < k; i += 32) {
    const Key key = sh.top[i];
    values[i] = probability(from_ordered_bits(uint32_t(key >> 32)), all);
    indices[i] = key_index(key);
  }
}

// The chunk's probabilities from the bits in registers; float4 stores where `vector_store`
// (kVector, and the probability row 16-byte aligned).
template <int kSlots, bool kVector>
__device__ __forceinline__ void write_probs(const ChunkInRegisters<kSlots, kVector>& c, float* row_probs, int end,
                                            bool vector_store, Stats all) {
  const auto p = [&](int j) { return probability(from_ordered_bits(c.bits[j]), all); };
  if (kVector && vector_store) {
#pragma unroll
    for (int g = 0; g < kSlots / 4; ++g) {
      const int at = slot_index<kVector>(c.begin, 4 * g);
      if (at < end) {
        *reinterpret_cast<float4*>(row_probs + at) = make_float4(p(4 * g), p(4 * g + 1), p(4 * g + 2), p(4 * g + 3));
      }
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < kSlots; ++j) {
    const int at = slot_index<kVector>(c.begin, j);
    if (at < end) row_probs[at] = p(j);
  }
}

// grid (cluster, B), clusters of `cluster` CTAs along x: cluster b is row b, CTA r of it holds
// [r * chunk, min(V, (r + 1) * chunk)); chunk <= 256 * kSlots and chunk % 4 == 0.
template <int kSlots, bool kVector>
__global__ void __launch_bounds__(kThreads, kSlots < 32 ? kMinBlocks : kMinBlocks32)
    cluster_topk_kernel(const float* __restrict__ x, float* __restrict__ probs, float* __restrict__ values,
                        int32_t* __restrict__ indices, int V, int k, int chunk, bool probabilities, bool with_stats) {
#if __CUDA_ARCH__ >= 900
  __shared__ SelectShared sh;
  __shared__ Stats stats_area[kWarps];
  __shared__ uint32_t maxima[kMaxCluster * kThreads];  // [rank][thread]: every CTA's thread maxima
  __shared__ Stats pairs[kMaxCluster];                 // each CTA's (m, s)

  namespace cl = wb::cluster;
  const unsigned rank = cl::rank(), size = cl::size();
  const int b = blockIdx.y, warp = threadIdx.x / 32;
  const float* row = x + size_t(b) * V;
  const int begin = min(V, int(rank) * chunk), end = min(V, begin + chunk);

  // 0. Rank 0's survivor list starts empty before any CTA adds to it: the barrier's first
  // half now, its second just before the first write into another CTA.
  if (rank == 0) start_survivors(k, sh);
  cl::arrive();

  // 1. The chunk into registers, as bits.
  ChunkInRegisters<kSlots, kVector> chunk_keys;
  {
    float v[kSlots];
    load_chunk<kSlots, kVector>(row, begin, end, v);
    chunk_keys.set(v, begin, end);
  }

  // 2. Every thread's maximum into every CTA. The CTA's (m, s): into every CTA before the
  // barrier when every CTA needs the row's (M, S) to write its probabilities; else computed
  // while the barrier completes, and sent to rank 0 alone later.
  const bool probs_form = probs != nullptr;
  Stats mine;
  cl::wait();
  for (unsigned to = 0; to < size; ++to) *cl::map(&maxima[rank * kThreads + threadIdx.x], to) = chunk_keys.max_bits;
  if (probs_form) {
    mine = chunk_stats(chunk_keys, stats_area);
    if (threadIdx.x < size) *cl::map(&pairs[rank], threadIdx.x) = mine;
  }
  cl::arrive();
  if (with_stats && !probs_form) mine = chunk_stats(chunk_keys, stats_area);
  cl::wait();

  // 3, 4. The row floor; this chunk's logits that reach it, into rank 0's survivors.
  const Key row_floor = floor_of(RowMaxima{maxima, int(size) * kThreads}, k, sh);
  chunk_keys.keep_from(uint32_t(row_floor >> 32), *cl::map(&sh, 0));
  if (with_stats && !probs_form && threadIdx.x == 0) *cl::map(&pairs[rank], 0) = mine;
  cl::arrive();  // the survivors are in rank 0; no CTA touches this one's shared memory again
  Stats all;
  if (probs_form) {
    all = row_pair(pairs, int(size));
    float* row_probs = probs + size_t(b) * V;
    write_probs(chunk_keys, row_probs, end, reinterpret_cast<uintptr_t>(row_probs) % 16 == 0, all);
  }
  if (rank != 0) return;

  // 5. Rank 0: the survivors ranked (or, when too many tie at the floor, the whole row
  // selected from memory), the result written.
  cl::wait();
  if (with_stats && !probs_form) all = row_pair(pairs, int(size));
  if (!rank_row_survivors(k, sh)) {
    const ChunkInMemory again{row, 0, V};
    select_top_k(again, key_range(again, sh), k, sh);
  }
  if (warp == 0) write_row_result(sh, row, values + size_t(b) * k, indices + size_t(b) * k, k, probabilities, all);
#endif
}

// --- the launch ----------------------------------------------------------------------------

// The cluster for B rows of V logits: CTAs (a power of two, one per 2,048 logits, at most 16)
// and logits a thread (the fewest of 4, 8, 16, 32 that cover the row). size 0: not served,
// which is also the answer when the batch's CTAs would not each have an SM of their own
// (B x size > sms): there v5's split, free of barriers, uses the GPU better (measured on an
// H200 at 64 and 256 rows of 128,256: v5 37.3 and 103.0 µs, this form 51.4 and 175.9).
struct ClusterShape {
  int size = 0, slots = 0;
};

ClusterShape cluster_shape(int B, int V, bool vector, int sms) {
  int size = 1;
  while (size < kMaxCluster && int64_t(size) * kLogitsPerCta < V) size *= 2;
  if (int64_t(B) * size > sms) return {};
  for (int slots : {4, 8, 16, 32}) {
    if (!vector && slots > kMaxScalarSlots) break;
    if (int64_t(size) * kThreads * slots >= V) return {size, slots};
  }
  return {};
}

int sm_count() {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Whether a cluster of `size` CTAs of this kernel fits on this GPU (asked once per size).
template <int kSlots, bool kVector>
bool fits(int size) {
  static int known[kMaxCluster + 1] = {};  // 0: not asked yet, 1: fits, 2: does not
  int& state = known[size];
  if (state == 0) state = wb::cluster::max_active(cluster_topk_kernel<kSlots, kVector>, kThreads, size) > 0 ? 1 : 2;
  return state == 1;
}

// Launches the cluster form; false (nothing launched) for a shape it does not serve.
bool launch(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            cudaStream_t stream) {
  require_valid(B, V, k);
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const ClusterShape c = cluster_shape(B, V, vector, sm_count());
  if (c.size == 0) return false;
  const int chunk = static_cast<int>((((int64_t(V) + c.size - 1) / c.size) + 3) / 4 * 4);
  const bool with_stats = probabilities || probs != nullptr;
  bool launched = false;
  const auto run = [&](auto kernel_fits, auto kernel) {
    if (!kernel_fits(c.size)) return;
    wb::cluster::launch(kernel, dim3(c.size, B), kThreads, c.size, stream, x, probs, values, indices, V, k, chunk,
                        probabilities, with_stats);
    launched = true;
  };
  wb::with_constant<4, 8, 16, 32>(c.slots, [&](auto n) {
    constexpr int s = n.value;
    if (vector) {
      run(&fits<s, true>, cluster_topk_kernel<s, true>);
    } else if constexpr (s <= kMaxScalarSlots) {
      run(&fits<s, false>, cluster_topk_kernel<s, false>);
    }
  });
  return launched;
}

}  // namespace

void topk_cluster(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                  cudaStream_t stream) {
  if (!launch(x, nullptr, values, indices, B, V, k, false, stream)) {
    topk_radix(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_cluster(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                          cudaStream_t stream) {
  if (!launch(x, nullptr, values, indices, B, V, k, true, stream)) {
    softmax_topk_radix(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_probs_cluster(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                void* workspace, cudaStream_t stream) {
  if (!launch(x, probs, values, indices, B, V, k, true, stream)) {
    softmax_topk_probs_radix(x, probs, values, indices, B, V, k, workspace, stream);
  }
}

}  // namespace ch07::solution
