// v8 — batch 1 on one cluster with one floor for the whole row: the warps' maxima, counted.
//
// Over v6: at batch 1 (one row of 128,256 logits) v6 takes 14.4 us on an H200, while the row's
// bytes need 0.12 us and an empty kernel between two events reads about 5 us. The rest is the
// chain of dependent steps between the loads and the answer, and v6's chain is long: a
// block-wide (m, s) merge, then in every CTA a radix select over its 256 thread maxima (the
// range of the keys, one or two 2,048-bin histogram passes, each a few barriers), up to 72
// keys written into each of the 16 CTAs, a second radix select over 16 x 72 keys, the
// survivors, and rank 0 ranking them with one thread per survivor and reading each winner's
// logit back from memory. v8 keeps v6's cluster (16 CTAs of 256 threads, 32 logits a thread in
// registers, the CTAs meeting in each other's shared memory) and shortens the chain to two
// cluster barriers, two block barriers and no select at all on the common path:
//
//   1. Load, as v6: 8 float4 loads a thread, all in flight; each thread's maximum, each warp's
//      maximum (one redux). Lanes 0..15 write the warp's maximum into CTA lane's shared memory:
//      after the first cluster barrier every CTA holds the 128 warp maxima of the row.
//   2. (Softmax forms, between the barrier's two halves:) each warp's (m, s) relative to its
//      maximum, one exp a logit; the CTA's pair goes to rank 0.
//   3. The row floor, the same in every CTA: the k-th largest of the 128 warp maxima, by
//      counting (each maximum against the others, 64 compares a thread). To need one compare,
//      not two (above, and at or above), the maxima are made unique: the low 7 bits of a
//      maximum's ordered bits give way to its warp's place in the row, and the floor is the
//      k-th largest such key with those 7 bits cleared (at most 127 units in the last place
//      below the k-th maximum). Each of the k largest maxima is a logit of the row at or above
//      it, so at least k logits reach the floor, and with them the row's k largest. For rows
//      drawn from normal(0, 2) about 63 logits reach it at k 50 (each warp's 1,024 logits
//      reach it with probability 50 / 128, which puts it near the top 0.05 % of the row).
//   4. Survivors: each warp counts its logits that reach the floor, takes a range of rank 0's
//      list with one atomic there (distributed shared memory), and writes their keys into it;
//      the second cluster barrier; every CTA but rank 0 exits.
//   5. Rank 0: the row's (M, S) from the 16 pairs (warp 0), the survivors ranked by counting
//      (warps 1..7, up to 4 threads a survivor), and warp 0 writes the k values (the
//      probabilities from the keys' bits; no read of the row) and indices.
//
// The exact paths, all on rank 0 and all slow, for the rows that need them: more than 224
// survivors (ties at the floor) go through v5's radix select over the survivors in shared
// memory (up to 1,024), more than that or a floor of -inf (a row of -inf, of {-inf, 0, 1}, of
// one repeated value) through the radix select over the whole row read again from memory (v6's
// path).
//
//   batch 1, V = 128,256: a cluster of 16 CTAs x 256 threads x 32 logits (131,072 >= V)
//
// The same floor at larger batches, without clusters: where the batch's clusters would share
// SMs (B x 16 > SMs), v8 runs v7's blocks (warp_floor.cuh) with one addition: each block also
// publishes its 8 warp maxima (as the keys above) in the workspace, and the row's last block
// raises v7's row floor (the highest block floor) to the k-th largest of the 128 maxima where
// that is higher. v7's last block radix-selects from the 700 to 1,000 published keys that reach
// the highest block floor; here about k + 13 reach the raised one, and they are ranked by
// counting. (Every block published all its logits at or above its own floor, or its k best,
// and the row's k largest are among those, so the candidates still hold them.) The last block
// also asks L2 for the maxima and the blocks' pairs together with the headers (one round trip
// where v7 makes three), merges the pairs in warp 0 while the other warps rank, and writes the
// probabilities from the keys' bits instead of reading the winners' logits back. On an H200 the
// last blocks' time goes straight into the kernel's at 256 rows (the last rows' selects are its
// tail): 64.4 us for v7, 62.2 with the counted floor, 59.7 with the round trips merged.
//
//   B = 256, V = 128,256: 16 blocks a row of 256 threads x 32 logits, as v7
//
// What it serves: rows of 65,537 to 131,072 logits that allow float4 loads: the cluster for
// the top-k and softmax + top-k forms while each CTA of the batch has an SM (B x 16 <= SMs:
// B <= 8 on 132 SMs) on a GPU that holds a 16-CTA cluster; the blocks for the three top-k forms
// beyond (rows of up to 16 blocks, 131,072 logits). Everything else goes where v7's routing
// sends it: v6 at small batch (v6 in turn sends what it does not serve to v5), v7 beyond.
//
// From radix_select.cuh: the chunk's load, the exact selects, the floor of the maxima and the
// ranking by counting. From warp_floor.cuh: v7's block, its last block, its launch. From
// harness/device/cluster.cuh: the cluster's rank, its barrier halves, mapa, the launch.
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v6_cluster_select,v7_warp_floor,v8_cluster_floor
#include <cstdint>

#include "device/cluster.cuh"
#include "ladder.cuh"
#include "radix_select.cuh"
#include "row_topk.cuh"
#include "runtime/launch_helpers.cuh"
#include "warp_floor.cuh"

namespace ch07::solution {
namespace {

constexpr int kCluster = 16;                           // CTAs a row (non-portable above 8)
constexpr int kRowMax = kCluster * kThreads * kSlots;  // 131,072: the longest row served
constexpr int kSurvivorCap = 1024;                     // rank 0's survivor list
static_assert(kCluster * kWarps == kMaxima, "a row's warps: 128");
static_assert(kRowMax == kMaximaSplits * kThreads * kSlots, "the two forms serve the same rows");

struct ClusterShared {
  SelectShared sh;              // rank 0: sh.top, the result (and the exact selects' state)
  Key survivors[kSurvivorCap];  // rank 0: the keys of the logits that reach the row floor
  uint32_t maxima[kMaxima];     // every CTA: the row's warp maxima as unique keys, [rank][warp]
  int above[kMaxima];           // floor_of_maxima's counts
  float2 warp_pairs[kWarps];    // this CTA's warps' (m, s)
  float2 cta_pairs[kCluster];   // rank 0: each CTA's (m, s)
  uint32_t floor_bits;          // the row floor (ordered bits)
  int survivor_count;           // rank 0: counts on past kSurvivorCap
};

// grid (16, B), clusters of 16 CTAs along x: cluster b is row b, CTA r of it holds
// [r * chunk, min(V, (r + 1) * chunk)); chunk <= 8,192 and chunk % 4 == 0; x allows float4 loads.
__global__ void __launch_bounds__(kThreads, 1)
    cluster_floor_kernel(const float* __restrict__ x, float* __restrict__ values, int32_t* __restrict__ indices, int V,
                         int k, int chunk, bool probabilities) {
#if __CUDA_ARCH__ >= 900
  __shared__ ClusterShared cs;
  namespace cl = wb::cluster;
  const unsigned rank = cl::rank();
  const int b = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const float* row = x + size_t(b) * V;
  const int begin = min(V, int(rank) * chunk), end = min(V, begin + chunk);

  // 0. Every CTA of the cluster has started before any writes into another: the first
  // barrier's first half now, its second before the first remote write.
  if (rank == 0 && threadIdx.x == 0) cs.survivor_count = 0;
  cl::arrive();

  // 1. The chunk; each thread's maximum (four chains), each warp's; into every CTA.
  float v[kSlots];
  load_chunk<kSlots, true>(row, begin, end, v);
  float part[4] = {v[0], v[1], v[2], v[3]};
#pragma unroll
  for (int j = 4; j < kSlots; ++j) part[j % 4] = fmaxf(part[j % 4], v[j]);
  const float m = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
  const bool holds = slot_index<true>(begin, 0) < end;  // the thread has a logit of the row
  const uint32_t max_bits = holds ? ordered_bits(m) : 0u;
  const uint32_t warp_max = __reduce_max_sync(kFull, max_bits);
  cl::wait();
  if (lane < kCluster) *cl::map(&cs.maxima[rank * kWarps + warp], lane) = maximum_key(warp_max, rank * kWarps + warp);
  cl::arrive();

  // 2. The warp's (m, s) relative to its maximum, while the barrier completes.
  if (probabilities) {
    const float top = warp_max <= ordered_bits(-INFINITY) ? -INFINITY : from_ordered_bits(warp_max);
    const float sum = warp_exp_sum(v, top);
    if (lane == 0) cs.warp_pairs[warp] = make_float2(top, sum);
  }
  cl::wait();

  // 3. The row floor (floor_of_maxima); warp 7 sends the CTA's pair to rank 0 meanwhile.
  {
    floor_of_maxima(cs.maxima, k, cs.above, [&](uint32_t f) { cs.floor_bits = f; });
    if (probabilities && threadIdx.x == kThreads - 32) {  // warp 7: the CTA's pair, to rank 0
      Stats pair{cs.warp_pairs[0].x, cs.warp_pairs[0].y};
#pragma unroll
      for (int w = 1; w < kWarps; ++w) pair = merge(pair, Stats{cs.warp_pairs[w].x, cs.warp_pairs[w].y});
      *cl::map(&cs.cta_pairs[rank], 0) = make_float2(pair.m, pair.s);
    }
    __syncthreads();
  }
  const uint32_t floor_bits = cs.floor_bits;
  // A floor of -inf would let the whole row through: rank 0 selects from memory instead.
  const bool few = floor_bits > ordered_bits(-INFINITY);

  // 4. The logits that reach the floor, into rank 0's list: one atomic there per warp that has
  // any. Slots past the chunk's end hold -inf, below any floor that is not.
  if (few) {
    const float floor_x = from_ordered_bits(floor_bits);
    int n = 0;
    if (max_bits >= floor_bits) {
#pragma unroll
      for (int j = 0; j < kSlots; ++j) n += v[j] >= floor_x;
    }
    if (__any_sync(kFull, n > 0)) {
      int inclusive = n;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(kFull, inclusive, o);
        if (lane >= o) inclusive += t;
      }
      int base = 0;
      if (lane == 31) base = atomicAdd(cl::map(&cs.survivor_count, 0), inclusive);
      int at = __shfl_sync(kFull, base, 31) + inclusive - n;
      if (n > 0) {
        Key* const list = cl::map(cs.survivors, 0);
#pragma unroll
        for (int j = 0; j < kSlots; ++j) {
          if (v[j] >= floor_x) {
            if (at < kSurvivorCap) list[at] = make_key(v[j], slot_index<true>(begin, j));
            ++at;
          }
        }
      }
    }
  }
  cl::arrive();  // the survivors and the pair are in rank 0; nothing touches this CTA's memory again
  if (rank != 0) return;

  // 5. Rank 0: the row's pair, the top k, the result.
  cl::wait();
  const int m_count = cs.survivor_count;
  Stats all;
  if (probabilities && warp == 0) {
    all = warp_merge(lane < kCluster ? Stats{cs.cta_pairs[lane].x, cs.cta_pairs[lane].y} : Stats{});
    all = {__shfl_sync(kFull, all.m, 0), __shfl_sync(kFull, all.s, 0)};
  }
  if (few && m_count <= kRankCap) {  // warps 1..7, while warp 0 merged the pairs
    rank_by_count(cs.survivors, m_count, k, cs.sh.top);
    __syncthreads();
  } else if (few && m_count <= kSurvivorCap) {
    const SharedKeys list{cs.survivors, m_count};
    select_top_k(list, key_range(list, cs.sh), k, cs.sh);
  } else {
    const ChunkInMemory again{row, 0, V};
    select_top_k(again, key_range(again, cs.sh), k, cs.sh);
  }
  if (warp == 0) {
    write_result_from_keys(cs.sh, row, values + size_t(b) * k, indices + size_t(b) * k, k, probabilities, all);
  }
#endif
}

// --- the launch ----------------------------------------------------------------------------

// Whether a 16-CTA cluster of the kernel fits on this GPU (asked once).
bool fits() {
  static const bool yes = wb::cluster::max_active(cluster_floor_kernel, kThreads, kCluster) > 0;
  return yes;
}

// Launches v8 for the shapes it serves; false (nothing launched) for the others.
bool launch(const float* x, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            cudaStream_t stream) {
  require_valid(B, V, k);
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  static const int sms = wb::sm_count();  // the first GPU used, as fits()
  if (!vector || V <= kRowMax / 2 || V > kRowMax || int64_t(B) * kCluster > sms || !fits()) return false;
  const int chunk = static_cast<int>((((int64_t(V) + kCluster - 1) / kCluster) + 3) / 4 * 4);
  wb::cluster::launch(cluster_floor_kernel, dim3(kCluster, B), kThreads, kCluster, stream, x, values, indices, V, k,
                      chunk, probabilities);
  return true;
}

// --- the form for batches whose clusters would share SMs: v7's blocks, the maxima published ---

// grid (splits, B), splits <= 16, 256 threads: v7's block on chunk s of row b, its warps'
// maxima published, the row's last block selecting from about k + 13 candidates.
__global__ void __launch_bounds__(kThreads, kMinBlocks) warp_floor_maxima_kernel(Job job) {
  __shared__ BlockShared bs;
  const int s = blockIdx.x, b = blockIdx.y;
  float v[kSlots];
  load_chunk<kSlots, true>(job.row(b), job.begin(s), job.end(s), v);
  chunk_step<true>(v, b, s, job, bs);
}

// Whether the batch's clusters have an SM a CTA.
bool clusters_fit(int B) {
  static const int sms = wb::sm_count();
  return int64_t(B) * kCluster <= sms;
}

// The step: the cluster where it serves; at larger batches the blocks with the maxima published
// (rows of at most 16 blocks); else v6 at small batch (which sends what it does not serve to
// v5), v7 beyond (likewise).
// `blocks`: the blocks at every batch (the form that checks them on every shape class).
bool launch_any(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
                void* workspace, cudaStream_t stream, bool blocks = false) {
  require_valid(B, V, k);
  if (clusters_fit(B) && !blocks) return probs == nullptr && launch(x, values, indices, B, V, k, probabilities, stream);
  return launch_blocks(warp_floor_maxima_kernel, kMaximaSplits, x, probs, values, indices, B, V, k, probabilities,
                       workspace, stream);
}

// The two list forms: v8 where it serves, else v6 where the clusters fit, v7 beyond.
void launch_or_route(const float* x, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
                     void* workspace, cudaStream_t stream, TopKFn* cluster_step, TopKFn* warp_floor_step) {
  if (launch_any(x, nullptr, values, indices, B, V, k, probabilities, workspace, stream)) return;
  (clusters_fit(B) ? cluster_step : warp_floor_step)(x, values, indices, B, V, k, workspace, stream);
}

}  // namespace

void topk_cluster_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                        cudaStream_t stream) {
  launch_or_route(x, values, indices, B, V, k, false, workspace, stream, topk_cluster, topk_warp_floor);
}

void softmax_topk_cluster_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                                cudaStream_t stream) {
  launch_or_route(x, values, indices, B, V, k, true, workspace, stream, softmax_topk_cluster, softmax_topk_warp_floor);
}

void softmax_topk_probs_cluster_floor(const float* x, float* probs, float* values, int32_t* indices, int B, int V,
                                      int k, void* workspace, cudaStream_t stream) {
  if (launch_any(x, probs, values, indices, B, V, k, true, workspace, stream)) return;
  if (clusters_fit(B)) {
    softmax_topk_probs_cluster(x, probs, values, indices, B, V, k, workspace, stream);
  } else {
    softmax_topk_probs_warp_floor(x, probs, values, indices, B, V, k, workspace, stream);
  }
}

// The blocks form at every batch, v7 where it does not serve.
void topk_cluster_floor_blocks(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                               cudaStream_t stream) {
  if (!launch_any(x, nullptr, values, indices, B, V, k, false, workspace, stream, true)) {
    topk_warp_floor(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_cluster_floor_blocks(const float* x, float* values, int32_t* indices, int B, int V, int k,
                                       void* workspace, cudaStream_t stream) {
  if (!launch_any(x, nullptr, values, indices, B, V, k, true, workspace, stream, true)) {
    softmax_topk_warp_floor(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_probs_cluster_floor_blocks(const float* x, float* probs, float* values, int32_t* indices, int B,
                                             int V, int k, void* workspace, cudaStream_t stream) {
  if (!launch_any(x, probs, values, indices, B, V, k, true, workspace, stream, true)) {
    softmax_topk_probs_warp_floor(x, probs, values, indices, B, V, k, workspace, stream);
  }
}

}  // namespace ch07::solution
