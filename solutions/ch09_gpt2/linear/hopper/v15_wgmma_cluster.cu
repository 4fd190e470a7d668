// Step 15 (Hopper sm_90a only) — v13's kernel in thread-block clusters: CTAs side by side
// along N share x's box (TMA multicast), CTAs on the two halves of K add their partial tiles
// through distributed shared memory, or both (a cluster of 4).
//
// What changes over v13_wgmma_bias_ahead, and why. At M = 512 every GPT-2 linear is one tile
// per CTA and one wave, 8-31 µs in all, and what a CTA waits on is its stream of stages from
// L2: at (128, 72) a 64-deep step is 288 cycles of math but (128 + 72) x 128 = 25.6 KB of
// boxes, and all 128 CTAs stream theirs at once (39 MB for 512 x 2304 x 768; 88 MB for the
// 48 steps of 512 x 768 x 3072's (64, 48) tiles). cuBLASLt's kernels for these shapes run
// CTA pairs that share loads (nvjet_sm90_tst_144x64_64x8_1x2: a 144-feature x 64-token tile,
// two of them on one cluster). Two ways to carry fewer bytes per output:
//   * share (Pairing::kShare = 2): two CTAs hold tiles side by side along N, which read the
//     same (BM, 64) box of x. Each asks TMA for half of it, and the copy engine writes that
//     half into both CTAs' shared memory (cp.async.bulk.tensor .multicast::cluster): a CTA
//     loads (BM / 2 + BN) rows per step instead of (BM + BN), 136 instead of 200 at (128, 72),
//     what cuBLASLt's pair loads. A stage is now written by two producers, so it is free again
//     only when the consumers of both CTAs are done with it: each consumer warp arrives on the
//     "empty" barrier of its own CTA and of the other (mapa + mbarrier.arrive on the
//     shared::cluster address), and an empty barrier counts 16 warps instead of 8.
//   * split (Pairing::kSplit = 2): two CTAs hold the same tile, and the CTA of half kr runs
//     the K steps of that half. The partial tiles meet through distributed shared memory,
//     without a workspace and in a fixed order: consumer warpgroup c of the tile is "owned" by
//     half c. The other half's warpgroup c writes its FP32 accumulators into the owner's
//     shared memory (thread t's float4 i at [i][t]: the same registers, coalesced), a cluster
//     barrier (release / acquire), and the owner adds them to its own and runs v13's
//     epilogue. Each output is p0 + p1 (FP32 addition commutes exactly), the same every run.
//     Half the steps per CTA, at the price of the exchange: 64 x WN x 4 bytes per consumer
//     through the SM-to-SM network, which is slower than L2 (a (128, 160) tile sends 40 KB).
//   * both (a cluster of 4, ranks kr kShare + nr): at N = 768, K = 3072 a (64, 96) tile in
//     four CTAs loads (32 + 96) rows for each of 24 steps, against v13's (64 + 48) rows for
//     each of 48.
// All keep v13's epilogue (harness/device/wgmma_gemm.cuh's kColumnsAhead path: the bias in
// registers before the K loop; + bias, GELU, one rounding on the registers), so the values
// and roundings are v13's up to the order of the FP32 partial sums where K is split.
//
// The cluster barrier: every thread of the cluster arrives once per phase. Phase 1 (after the
// barriers are initialised, relaxed: fence.mbarrier_init publishes them): sharing CTAs wait at
// once (the other's copies and arrivals reach this CTA's barriers); split-only ones only
// before the exchange (the partner has started, its shared memory exists). Phase 2: without a
// split, a consumer arrives after its last release of the other's stage and waits after its
// epilogue; with one, the exchange lies between the two halves of the barrier. No CTA exits
// while another may still write to it.
//
// The grid is one cluster per group of tiles (not persistent): the launcher takes a cluster
// only where its cost model (cluster_linear::score: v12's score with the L2 bytes weighed as
// the first measurements of this step said, the exchange, the waves of clusters) puts it
// below v13, and v13 elsewhere.
//
// Run: build/ch09/bin/ch09_bench --full --op=linear_bias/bf16 --impl=v15_wgmma_cluster,v13_wgmma_bias_ahead,reference
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "device/cluster.cuh"
#include "wgmma_linear.cuh"

namespace ch09::solution::hopper {

namespace cluster_linear {

using wb::sm90::KMajorTile;

// A cluster's arrangement: kShare CTAs side by side along N that share x's box (1 or 2), times
// kSplit CTAs along K whose partial tiles are added (1 or 2). Rank = kr kShare + nr: nr the
// place along N, kr the half of K.
template <int kShare_, int kSplit_>
struct Pairing {
  static constexpr int kShare = kShare_, kSplit = kSplit_, kSize = kShare * kSplit;
  static_assert((kShare == 1 || kShare == 2) && (kSplit == 1 || kSplit == 2) && kSize > 1, "a cluster of 2 or 4");
};
using Multicast = Pairing<2, 1>;
using SplitK = Pairing<1, 2>;
using MulticastSplitK = Pairing<2, 2>;

// The tile of a pairing: v13's stages of (BM + BN) x 128 bytes, as many as fit in 200 KB
// with split-K's exchange buffer (one consumer's accumulators, 64 x WN FP32), at most 8.
template <int BM, int BN, class P>
struct Form {
  static constexpr int kWN = BM == 128 ? BN : BN / 2;
  static constexpr int kExchangeBytes = P::kSplit == 2 ? 64 * kWN * 4 : 0;
  using Tile = KMajorTile<BM, BN, std::min(8, (200 * 1024 - kExchangeBytes) / ((BM + BN) * 128))>;
  static constexpr int kSmem = Tile::kSmem + kExchangeBytes;
};

// A tile's size, for the cost model (the kernel's tile is Form's).
template <int BM_, int BN_>
struct Size {
  static constexpr int BM = BM_, BN = BN_;
};
// v13's tiles and one more of 48 columns per consumer, which split-K takes at N = 768.
using Tiles = std::tuple<Size<128, 256>, Size<128, 208>, Size<128, 160>, Size<128, 128>, Size<128, 96>, Size<128, 72>,
                         Size<64, 112>, Size<64, 96>, Size<64, 48>>;

}  // namespace cluster_linear

// grid: P::kSize x (the clusters), in clusters of P::kSize along x; block Tile::kThreads;
// dynamic shared memory Form::kSmem. map_a's boxes are (64, BM / P::kShare): a sharing CTA
// loads its half of x's box. Cluster p holds block row bm = p % tiles_m and block columns
// bn = kShare (p / tiles_m) + nr; the CTA of K half kr runs the K steps [kr h, kr h + h),
// h = ceil(steps / kSplit).
template <class Tile, class P, class Epilogue>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    cluster_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M,
                        int N, int K, const Epilogue epi) {
#if defined(WB_SM90A_GEMM)
  using namespace wb::sm90;
  using wb::ptx::smem_u32;
  static_assert(ColumnsAhead<Epilogue>, "v13's epilogue: the bias loaded before the K loop");
  constexpr bool kShared = P::kShare == 2, kSplit = P::kSplit == 2;
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, kStages = Tile::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  auto a_stage = [&](int s) { return base + uint32_t(s * Tile::kABytes); };
  auto b_stage = [&](int s) { return base + uint32_t(kStages * Tile::kABytes + s * Tile::kBBytes); };
  // split-K: the owner's buffer for its partner's accumulators, after the stages
  float4* exchange =
      reinterpret_cast<float4*>(smem_raw + (base - smem_u32(smem_raw)) + kStages * (Tile::kABytes + Tile::kBBytes));

  const unsigned rank = wb::cluster::rank();
  const int nr = int(rank) % P::kShare, kr = int(rank) / P::kShare;
  const unsigned sharer = rank ^ 1u;                    // kShared: the CTA beside this one along N
  const unsigned partner = rank ^ unsigned(P::kShare);  // kSplit: the CTA of the other K half
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, cluster = blockIdx.x / P::kSize;
  const int bm = cluster % tiles_m, bn = P::kShare * (cluster / tiles_m) + nr;
  const int ktiles = (K + BK - 1) / BK, per_half = (ktiles + P::kSplit - 1) / P::kSplit;
  const int kt0 = kr * per_half, steps = max(0, min(ktiles, kt0 + per_half) - kt0);
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      // one arrive per consumer warp of every CTA that writes the stage
      mbar_init(smem_u32(&empty_bar[s]), Tile::kConsumers * 4 * P::kShare);
    }
    fence_mbarrier_init();  // visible to the copy engine and to the cluster
  }
  __syncthreads();
  wb::cluster::arrive_relaxed();  // phase 1: this CTA has started, its barriers are initialised
  if constexpr (kShared) wb::cluster::wait();

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      // A sharing cluster's second tile may lie past N (tiles_n odd): no W box, nothing stored.
      const bool has_b = bn < tiles_n;
      PipeState<kStages> ps;
      produce_tile(ps, full_bar, empty_bar, steps, Tile::kABytes + (has_b ? Tile::kBBytes : 0),
                   [&](int s, int kt, uint32_t bar) {
                     const int k = (kt0 + kt) * BK;
                     if constexpr (kShared) {  // this CTA's half of x's box, into both CTAs of the K half
                       constexpr int kHalf = Tile::kABytes / 2;
                       tma_load_2d_multicast(a_stage(s) + nr * kHalf, &map_a, k, bm * BM + nr * (BM / 2), bar,
                                             uint16_t(0x3u << (2 * kr)));
                     } else {
                       tma_load_2d(a_stage(s), &map_a, k, bm * BM, bar);
                     }
                     if (has_b) tma_load_2d(b_stage(s), &map_b, k, bn * BN, bar);
                   });
    }
    __syncwarp();
    if constexpr (!kShared) wb::cluster::wait();
    wb::cluster::arrive_relaxed();  // phase 2
    wb::cluster::wait();
  } else {
    setmaxnreg_inc<232>();
    const int cw = warpgroup - 1, cm = cw / Tile::CN, cn = cw % Tile::CN;
    const int lane = threadIdx.x % 32, t = threadIdx.x % 128;
    PipeState<kStages> ps;
    float d[Tile::kAcc];
#pragma unroll
    for (int i = 0; i < Tile::kAcc; ++i) d[i] = 0.0f;
    const int row0 = bm * BM + cm * 64, col0 = bn * BN + cn * Tile::WN;
    float2 cols[Tile::kAcc / 4];  // column pairs col0 + 2 q + 8 j, loaded ahead of the K loop
#pragma unroll
    for (int j = 0; j < Tile::kAcc / 4; ++j) cols[j] = epi.columns(col0 + 2 * (t % 4) + 8 * j);
    auto math = [&](int s) {
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        const uint64_t desc_a = make_desc(a_stage(s) + uint32_t(cm * 64 * 128 + kk * 32), 16, 1024);
        const uint64_t desc_b = make_desc(b_stage(s) + uint32_t(cn * Tile::WN * 128 + kk * 32), 16, 1024);
        wgmma_ss<bf16, Tile::WN, 0, 0>(d, desc_a, desc_b);
      }
    };
    consume_stages(ps, full_bar, steps, d, math, [&](int s) {
      if (lane == 0) {
        mbar_arrive(smem_u32(&empty_bar[s]));
        if constexpr (kShared) mbar_arrive_cluster(smem_u32(&empty_bar[s]), sharer);  // it wrote the stage too
      }
    });
    if constexpr (!kSplit) {
      wb::cluster::arrive_relaxed();  // phase 2: this warp is done with the sharer's barriers
      for_each_pair(d, cols, row0, col0, epi);
      wb::cluster::wait();
    } else {
      const bool owner = cw == kr;                  // K half kr stores consumer kr's outputs
      if constexpr (!kShared) wb::cluster::wait();  // phase 1: the partner has started
      if (!owner) {                                 // this warpgroup's partial to the partner, the owner
        float4* to = wb::cluster::map(exchange, partner);
#pragma unroll
        for (int i = 0; i < Tile::kAcc / 4; ++i) {
          to[i * 128 + t] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
        }
      }
      wb::cluster::arrive();  // phase 2: the partials are written (release) ...
      wb::cluster::wait();    // ... and visible (acquire)
      if (owner) {
#pragma unroll
        for (int i = 0; i < Tile::kAcc / 4; ++i) {
          const float4 p = exchange[i * 128 + t];
          d[4 * i] += p.x, d[4 * i + 1] += p.y, d[4 * i + 2] += p.z, d[4 * i + 3] += p.w;
        }
        for_each_pair(d, cols, row0, col0, epi);
      }
    }
  }
#else
  __trap();  // built for sm_90a only; its launchers never run it elsewhere
#endif
}

namespace cluster_linear {

// The clusters of pairing (share, split) on the shape.
inline long long clusters(int share, int bm, int bn, int M, int N) {
  const long long tm = ceil_div(M, bm), tn = ceil_div(N, bn);
  return tm * ((tn + share - 1) / share);
}

// The cost of tile (bm, bn) in clusters of share x split CTAs, in cycles, v12's score
// (linear::score) with the L2 bytes weighed as measured: waves of clusters (sms / size at
// once) x (the CTA's K steps x the larger of its math, bm bn / 32, and its L2 bytes at ~48 per
// cycle, + fill and epilogue + the cluster barriers); a sharing CTA loads bm / 2 rows of x, a
// split one runs half the steps and sends 64 x WN FP32 partials (~14 bytes per cycle).
inline double score(int share, int split, int bm, int bn, int M, int N, int K, int sms) {
  const int size = share * split;
  const double waves = std::ceil(double(clusters(share, bm, bn, M, N)) / std::max(1, sms / size));
  const int steps = (ceil_div(K, 64) + split - 1) / split, wn = bm == 128 ? bn : bn / 2;
  const double step = std::max(bm * bn / 32.0, (double(bm) / share + bn) * 128.0 / 48.0);
  const double exchange = split == 2 ? 64.0 * wn * 4.0 / 14.0 : 0.0;
  return waves * (steps * step + 1500.0 + (size > 1 ? 300.0 : 0.0) + exchange);
}

// Launches pairing P on tile (BM, BN); false (nothing launched) when no cluster of the kernel
// fits on this GPU.
template <int BM, int BN, class P, class Store>
bool launch(const bf16* x, const bf16* w, int M, int N, int K, const Store& store, cudaStream_t stream,
            const char* who) {
  using F = Form<BM, BN, P>;
  using T = typename F::Tile;
  auto* kernel = &cluster_gemm_kernel<T, P, Store>;
  static const bool fits = [&] {
    wb::allow_dynamic_smem(kernel, F::kSmem);
    return wb::cluster::max_active(kernel, T::kThreads, P::kSize, F::kSmem) > 0;
  }();
  if (!fits) return false;
  thread_local linear::MapEntry map_x, map_w;
  const CUtensorMap& mx = linear::map_of(map_x, x, M, K, BM / P::kShare, who);  // sharing: half of x's box each
  const CUtensorMap& mw = linear::map_of(map_w, w, N, K, BN, who);
  const long long grid = P::kSize * clusters(P::kShare, BM, BN, M, N);
  if (grid > 0x7fffffffLL) return false;
  const wb::cluster::Config config(dim3(unsigned(grid)), T::kThreads, P::kSize, stream, F::kSmem);
  CUDA_CHECK(cudaLaunchKernelEx(config.get(), kernel, mx, mw, M, N, K, store));
  return true;
}

// Pairing P on its cheapest tile; false when its cluster does not fit.
template <class P, class Store>
bool run(const bf16* x, const bf16* w, int M, int N, int K, const Store& store, int sms, cudaStream_t stream,
         const char* who) {
  bool done = false;
  linear::with_cheapest_tile<Tiles>(
      [&](int bm, int bn) { return score(P::kShare, P::kSplit, bm, bn, M, N, K, sms); },
      [&](auto tile) { done = launch<decltype(tile)::BM, decltype(tile)::BN, P>(x, w, M, N, K, store, stream, who); });
  return done;
}

// f(BM, BN) for each tile size of the tuple List.
template <class List, class F>
void for_each_size(F&& f) {
  std::apply([&](auto... size) { (f(decltype(size)::BM, decltype(size)::BN), ...); }, List{});
}

// The cheapest score of pairing (share, split) over its tiles; (1, 1) is v13 on the same
// terms.
inline double best_score(int share, int split, int M, int N, int K, int sms) {
  double best = INFINITY;
  for_each_size<Tiles>([&](int bm, int bn) { best = std::min(best, score(share, split, bm, bn, M, N, K, sms)); });
  return best;
}

}  // namespace cluster_linear

void linear_wgmma_cluster(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                          ClusterForm form, cudaStream_t stream) {
  namespace cl = cluster_linear;
  const int sms = linear::sm_count();
  const bool pairs = N % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
  const BiasAheadStore store{{b, y, M, N, epi, pairs}};
  const char* who = "v15_wgmma_cluster";
  bool done = false;
  switch (form) {
    case ClusterForm::Multicast:
      done = cl::run<cl::Multicast>(x, w, M, N, K, store, sms, stream, who);
      break;
    case ClusterForm::SplitK:
      done = cl::run<cl::MulticastSplitK>(x, w, M, N, K, store, sms, stream, who);
      break;
    case ClusterForm::Auto: {
      // The cheapest of v13 (on the same terms) and the three pairings.
      const double v13 = cl::best_score(1, 1, M, N, K, sms), mc = cl::best_score(2, 1, M, N, K, sms);
      const double sk = cl::best_score(1, 2, M, N, K, sms), both = cl::best_score(2, 2, M, N, K, sms);
      const double best = std::min({v13, mc, sk, both});
      if (best == v13) break;
      if (best == mc) {
        done = cl::run<cl::Multicast>(x, w, M, N, K, store, sms, stream, who);
      } else if (best == both) {
        done = cl::run<cl::MulticastSplitK>(x, w, M, N, K, store, sms, stream, who);
      } else {
        done = cl::run<cl::SplitK>(x, w, M, N, K, store, sms, stream, who);
      }
      break;
    }
  }
  if (!done) linear_wgmma_bias_ahead(x, w, b, y, M, N, K, epi, stream);  // v13, or no cluster fits
}

}  // namespace ch09::solution::hopper
