// v6 — one thread-block cluster per row: the CTAs of a row meet in each other's shared memory.
//
// Over v5: at batch 1 (one row of 128,256 logits) v5 takes 23.3 µs on an H200 while the row's
// bytes need 0.12 µs. The time is latency, and most of it is v5's hand-over: 126 CTAs each
// publish k keys to a global workspace, count themselves in with an atomic, and the last one
// alone selects the top k of 126 x 50 keys read back from L2. Here a row is ONE cluster of up
// to 16 CTAs (compute capability 9.0: the CTAs of a cluster run at the same time on one GPC and
// can read, write and count in each other's shared memory), and the hand-over is two cluster
// barriers and a few hundred stores between SMs:
//
//   1. Load, as v5: each CTA holds its chunk of the row in registers (256 threads x up to 32
//      logits, every load in flight at once), its (m, s) pair and its ordered bits.
//   2. A local floor, as v5: the k-th largest of the CTA's 256 thread maxima (a little below
//      it: at most k + 8 maxima reach it). The CTA keeps the maxima that reach it.
//   3. Exchange: every CTA writes its kept maxima (<= 72 keys) and its (m, s) into the shared
//      memory of EVERY CTA of the cluster; one cluster barrier.
//   4. A row floor: each CTA, on its own and identically, selects the k-th largest of all the
//      kept maxima (<= 16 x 72 keys, from its own shared memory; v5's radix select again). It
//      is the k-th largest of the row's 4,096 thread maxima (every maximum above it was kept),
//      so k logits reach it and the row's k largest do too; for smooth data few others do
//      (k to k + 8; the largest of the CTAs' local floors would let 600 to 750 through in a
//      simulation of rows drawn from normal(0, 2)).
//   5. Gather: each CTA adds its logits that reach the row floor to rank 0's survivor list
//      (a shared-memory atomic in rank 0 for the slot) and arrives at the second barrier;
//      every CTA also merges the 16 pairs into the row's (M, S) and, for the full-probability
//      form, writes its chunk's probabilities from its registers (no second kernel).
//   6. Rank 0 waits, ranks the survivors as v5 does (the place of a key is the number of
//      survivors above it) and writes the k sorted values and indices. If more than 128 logits
//      reach the row floor (thousands of equal logits), rank 0 runs the radix select proper
//      over the whole row read again from memory: slow, correct, and rare.
//
//   batch 1, V = 128,256:  a cluster of 16 CTAs x 256 threads x 32 logits (131,072 >= V)
//
// No workspace, no atomics in global memory, no second kernel, one launch. Why 16 CTAs and not
// 8 (the portable maximum, which needs no opt-in): 8 CTAs would hold 64 logits a thread, twice
// the registers of v5's largest chunk (and half the SMs pulling the row in); 16 keep v5's
// register budget (64 a thread, 4 CTAs an SM). The price is the non-portable opt-in
// (cudaFuncAttributeNonPortableClusterSizeAllowed) and a cluster that must find 16 CTA slots in
// one GPC; the launcher asks the occupancy calculator first.
//
// What it does not serve goes to v5_radix_select, same arguments: batches whose clusters would
// share SMs (B x CTAs per row > the SM count: B > 8 at V = 128,256 on 132 SMs; measured on an
// H200 without this rule, v6 took 51.4 and 175.9 us at 64 and 256 rows against v5's 37.3 and
// 103.0: there v5's split, free of cluster barriers, uses the GPU better), rows longer than 16 x 256 x 32 = 131,072
// logits (16 x 256 x 16 = 65,536 when the row does not allow float4 loads), a kernel built for a GPU older than sm_90
// or a GPU without clusters, and a cluster shape the occupancy calculator says does not fit. Shorter rows get fewer
// CTAs (a power of two, about one per 2,048 logits) and fewer logits a thread.
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

constexpr int kMaxCluster = 16;                // CTAs per row, at most (non-portable above 8)
constexpr int kKeptCap = kMaxK + kFloorSlack;  // maxima a CTA keeps: at most k + 8
constexpr int kLogitsPerCta = kThreads * 8;    // the cluster size: one CTA per 2,048 logits
// 32 logits a thread held across both barriers, with the probabilities written after the
// second, do not fit in v5's 64 registers: 3 CTAs an SM (80 registers) for that chunk size.
constexpr int kMinBlocks32 = 3;
static_assert(kMaxCluster <= 32, "warp 0's lanes merge the CTAs' pairs");

// A floor below the k largest of `keys` that at most k + kFloorSlack of them reach: the
// bottom of the radix select's last bin; 0 (every key) when there are fewer than k.
template <class Keys>
__device__ __forceinline__ Key floor_of(const Keys& keys, int k, SelectShared& sh) {
  const Range r = key_range(keys, sh);
  return r.n < k ? kNoKey : narrow(keys, r, k, k + kFloorSlack, sh);
}

// The (m, s) pair of the logits the CTA holds in registers; every thread gets it.
template <int kSlots>
__device__ __forceinline__ Stats chunk_stats(const float (&v)[kSlots], Stats* area) {
  Stats st;
  add_values(st, v);
  return block_stats<kWarps>(st, area);
}

// The row's (M, S) from the CTAs' pairs, the same bits in every thread of every CTA: warp
// lanes merge in a fixed order and lane 0's result is taken.
__device__ __forceinline__ Stats row_pair(const Stats* pairs, int n) {
  const int lane = threadIdx.x & 31;
  const Stats st = warp_merge(lane < n ? pairs[lane] : Stats{});
  return {__shfl_sync(kFull, st.m, 0), __shfl_sync(kFull, st.s, 0)};
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
  __shared__ Key kept[kMaxCluster * kKeptCap];  // [rank][kKeptCap]: each CTA's kept maxima, kNoKey after
  __shared__ Stats pairs[kMaxCluster];          // each CTA's (m, s)
  __shared__ Key mine_kept[kKeptCap];           // this CTA's kept maxima, in no order
  __shared__ int mine_count;

  namespace cl = wb::cluster;
  const unsigned rank = cl::rank(), size = cl::size();
  const int b = blockIdx.y, warp = threadIdx.x / 32;
  const float* row = x + size_t(b) * V;
  const int begin = min(V, int(rank) * chunk), end = min(V, begin + chunk);

  // 0. Rank 0's survivor list starts empty before any CTA adds to it: the barrier's first
  // half now, its second just before the first write into another CTA.
  if (rank == 0) start_survivors(k, sh);
  if (threadIdx.x == 0) mine_count = 0;
  cl::arrive();

  // 1. The chunk into registers; its (m, s); its bits.
  float v[kSlots];
  load_chunk<kSlots, kVector>(row, begin, end, v);
  const Stats mine = with_stats ? chunk_stats(v, stats_area) : Stats{};
  ChunkInRegisters<kSlots, kVector> chunk_keys;
  chunk_keys.set(v, begin, end);

  // 2. The local floor over the threads' maxima; the maxima that reach it are kept, keyed by
  // their thread's place in the row's cluster (unique in the row).
  const Key local_max =
      chunk_keys.max_bits != 0 ? (Key(chunk_keys.max_bits) << 32) | Key(~uint32_t(threadIdx.x)) : kNoKey;
  const Key local_floor = floor_of(OneKey{local_max}, k, sh);
  if (is_real(local_max) && local_max >= local_floor) {
    mine_kept[atomicAdd(&mine_count, 1)] =
        (Key(chunk_keys.max_bits) << 32) | Key(~uint32_t(rank * kThreads + threadIdx.x));
  }
  __syncthreads();

  // 3. Every CTA's kept maxima and pair into every CTA.
  cl::wait();
  for (int i = threadIdx.x; i < int(size) * kKeptCap; i += kThreads) {
    const int to = i / kKeptCap, slot = i % kKeptCap;
    *cl::map(&kept[rank * kKeptCap + slot], to) = slot < mine_count ? mine_kept[slot] : kNoKey;
  }
  if (with_stats && threadIdx.x < size) *cl::map(&pairs[rank], threadIdx.x) = mine;
  cl::sync();

  // 4, 5. The row floor; this chunk's logits that reach it, into rank 0's survivors.
  const Key row_floor = floor_of(SharedKeys{kept, int(size) * kKeptCap}, k, sh);
  chunk_keys.keep_from(uint32_t(row_floor >> 32), *cl::map(&sh, 0));
  cl::arrive();  // the survivors are in rank 0; no CTA touches this one's shared memory again
  Stats all;
  if (with_stats) all = row_pair(pairs, int(size));
  if (probs != nullptr) {
    float* row_probs = probs + size_t(b) * V;
    write_probs(chunk_keys, row_probs, end, reinterpret_cast<uintptr_t>(row_probs) % 16 == 0, all);
  }
  if (rank != 0) return;

  // 6. Rank 0: the survivors ranked (or, when too many tie at the floor, the whole row
  // selected from memory), the result written.
  cl::wait();
  if (!rank_survivors(k, sh)) {
    const ChunkInMemory again{row, 0, V};
    select_top_k(again, key_range(again, sh), k, sh);
  }
  if (warp == 0) write_result(sh, row, values + size_t(b) * k, indices + size_t(b) * k, k, probabilities, all);
#endif
}

// --- the launch ----------------------------------------------------------------------------

// The cluster for rows of V logits: CTAs (a power of two, one per 2,048 logits, at most 16)
// and logits a thread (the fewest of 4, 8, 16, 32 that cover the row). size 0: not served.
struct ClusterShape {
  int size = 0, slots = 0;
};

ClusterShape cluster_shape(int B, int V, bool vector, int sms) {
  int size = 1;
  while (size < kMaxCluster && int64_t(size) * kLogitsPerCta < V) size *= 2;
  if (int64_t(B) * size > sms) return {};  // the batch's clusters would share SMs: v5
  for (int slots : {4, 8, 16, 32}) {
    if (!vector && slots > kMaxScalarSlots) break;
    if (int64_t(size) * kThreads * slots >= V) return {size, slots};
  }
  return {};
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
  static const int sms = wb::sm_count();  // the first GPU used, as fits() below
  const ClusterShape c = cluster_shape(B, V, vector, sms);
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
