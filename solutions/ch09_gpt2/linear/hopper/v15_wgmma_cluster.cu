// Step 15 (Hopper sm_90a only) — v13's kernel in CTA pairs (thread-block clusters of 2): the
// pair either shares its x box (TMA multicast) or splits the K loop and adds its two partial
// tiles through distributed shared memory.
//
// What changes over v13_wgmma_bias_ahead, and why. At M = 512 every GPT-2 linear is one tile
// per CTA and one wave, 8-25 µs in all; cuBLASLt's kernels for these shapes run CTA pairs that
// share loads (nvjet_sm90_tst_144x64_64x8_1x2: a 144-feature x 64-token tile, two of them on
// one cluster). What a CTA of v13 waits on is its stream of stages from L2: at (128, 72) a
// 64-deep step is 288 cycles of math but (128 + 72) x 128 = 25.6 KB of boxes, about 400 cycles
// at ~64 bytes per cycle per SM. Two ways to carry fewer bytes per CTA:
//   * multicast (ClusterMode::Multicast): the pair holds two tiles side by side along N, which
//     read the same (BM, 64) box of x. Each CTA asks TMA for half of it and the copy engine
//     writes that half into both CTAs' shared memory (cp.async.bulk.tensor .multicast::cluster),
//     so a CTA loads (BM / 2 + BN) rows per step instead of (BM + BN): 136 instead of 200 at
//     (128, 72), what cuBLASLt's pair loads. A stage is now written by both CTAs' producers, so
//     it is free again only when the consumers of both CTAs are done with it: each consumer
//     warp arrives on the "empty" barrier of its own CTA and of its peer (mapa +
//     mbarrier.arrive.release.cluster), and an empty barrier counts 16 warps instead of 8.
//   * split-K (ClusterMode::SplitK): the pair holds one tile, and CTA rank r runs the K steps
//     of its half. The two partial tiles meet through distributed shared memory, without a
//     workspace and in a fixed order: consumer warpgroup c of the tile is "owned" by rank c.
//     The other CTA's warpgroup c writes its FP32 accumulators into the owner's shared memory
//     (thread t's float4 i at [i][t]: the same registers, coalesced), a cluster barrier
//     (release / acquire), and the owner adds them to its own and runs v13's epilogue. The
//     sum of each output is p0 + p1 (FP32 addition commutes exactly), the same on every run.
//     This halves the steps of a CTA at the same tile, or keeps them at twice the tile: at N =
//     768, K = 3072 v13 streams 48 steps of a (64, 48) tile; split, (64, 96) runs 24 steps
//     with 20 % fewer bytes each.
// Both keep v13's epilogue (harness/device/wgmma_gemm.cuh's kColumnsAhead path: the bias in
// registers before the K loop, + bias, GELU, one rounding on the registers), the same values
// and roundings up to the order of the FP32 partial sums in split-K.
//
// The cluster barrier: every thread of both CTAs arrives once per phase. Phase 1 (after the
// barriers are initialised): with multicast every thread waits at once (a peer's copies and
// arrivals reach this CTA's barriers); with split-K only before the exchange (the peer has
// started, its shared memory exists). Phase 2: multicast, a consumer arrives after its last
// release of a peer's stage and waits after its epilogue; split-K, the exchange between the
// arrive and the wait. No CTA exits while its peer may still write to it.
//
// The grid is one cluster per pair of tiles (not persistent): the launcher
// (linear/v15_wgmma_cluster.cu, cost model there) takes this step only where a pair of tiles
// per cluster fills the GPU in one wave, and v13 elsewhere.
//
// Run: build/ch09/bin/ch09_bench --full --op=linear_bias/bf16 --impl=v15_wgmma_cluster,v13_wgmma_bias_ahead,reference
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "device/cluster.cuh"
#include "wgmma_linear.cuh"

namespace ch09::solution::hopper {

enum class ClusterMode { Multicast, SplitK };

namespace cluster_linear {

using wb::sm90::KMajorTile;

// The tile of mode kMode: v13's stages of (BM + BN) x 128 bytes, as many as fit in 200 KB
// with split-K's exchange buffer (one consumer's accumulators, 64 x WN FP32), at most 8.
template <int BM, int BN, ClusterMode kMode>
struct Form {
  static constexpr int kWN = BM == 128 ? BN : BN / 2;
  static constexpr int kExchangeBytes = kMode == ClusterMode::SplitK ? 64 * kWN * 4 : 0;
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

// grid: 2 x (the pairs of tiles), in clusters of 2 along x; block Tile::kThreads; dynamic
// shared memory Form::kSmem. Multicast: map_a's boxes are (64, BM / 2), cluster p holds tiles
// (bm, 2 bn' + rank) with bm = p % tiles_m. Split-K: map_a's boxes are (64, BM), cluster p holds
// tile (p % tiles_m, p / tiles_m), rank r the K steps [r h, r h + h), h = ceil(steps / 2).
template <class Tile, ClusterMode kMode, class Epilogue>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    cluster_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M,
                        int N, int K, const Epilogue epi) {
#if defined(WB_SM90A_GEMM)
  using namespace wb::sm90;
  using wb::ptx::smem_u32;
  static_assert(ColumnsAhead<Epilogue>, "v13's epilogue: the bias loaded before the K loop");
  constexpr bool kMulticast = kMode == ClusterMode::Multicast;
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, kStages = Tile::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  auto a_stage = [&](int s) { return base + uint32_t(s * Tile::kABytes); };
  auto b_stage = [&](int s) { return base + uint32_t(kStages * Tile::kABytes + s * Tile::kBBytes); };
  // split-K: the owner's buffer for its peer's accumulators, after the stages
  float4* exchange =
      reinterpret_cast<float4*>(smem_raw + (base - smem_u32(smem_raw)) + kStages * (Tile::kABytes + Tile::kBBytes));

  const unsigned rank = wb::cluster::rank(), peer = rank ^ 1u;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, pair = blockIdx.x / 2;
  const int bm = pair % tiles_m, bn = kMulticast ? 2 * (pair / tiles_m) + int(rank) : pair / tiles_m;
  const int ktiles = (K + BK - 1) / BK, half = (ktiles + 1) / 2;
  const int kt0 = kMulticast ? 0 : int(rank) * half;  // this CTA's first K step and count
  const int steps = kMulticast ? ktiles : max(0, min(ktiles, kt0 + half) - kt0);
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      // one arrive per consumer warp of every CTA that writes the stage
      mbar_init(smem_u32(&empty_bar[s]), Tile::kConsumers * 4 * (kMulticast ? 2 : 1));
    }
    fence_mbarrier_init();  // visible to the copy engine and to the peer
  }
  __syncthreads();
  wb::cluster::arrive();  // phase 1: this CTA has started, its barriers are initialised
  if constexpr (kMulticast) wb::cluster::wait();

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      // A multicast pair's second tile may lie past N (tiles_n odd): no W box, zeros in y.
      const bool has_b = bn < tiles_n;
      PipeState<kStages> ps;
      produce_tile(ps, full_bar, empty_bar, steps, Tile::kABytes + (has_b ? Tile::kBBytes : 0),
                   [&](int s, int kt, uint32_t bar) {
                     const int k = (kt0 + kt) * BK;
                     if constexpr (kMulticast) {  // this CTA's half of x's box, into both CTAs
                       constexpr int kHalf = Tile::kABytes / 2;
                       tma_load_2d_multicast(a_stage(s) + rank * kHalf, &map_a, k, bm * BM + int(rank) * (BM / 2), bar,
                                             uint16_t(0x3));
                     } else {
                       tma_load_2d(a_stage(s), &map_a, k, bm * BM, bar);
                     }
                     if (has_b) tma_load_2d(b_stage(s), &map_b, k, bn * BN, bar);
                   });
    }
    __syncwarp();
    if constexpr (!kMulticast) wb::cluster::wait();
    wb::cluster::arrive();  // phase 2
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
        if constexpr (kMulticast) mbar_arrive_cluster(smem_u32(&empty_bar[s]), peer);  // the peer wrote it too
      }
    });
    if constexpr (kMulticast) {
      wb::cluster::arrive();  // phase 2: this warp is done with the peer's barriers
      for_each_pair(d, cols, row0, col0, epi);
      wb::cluster::wait();
    } else {
      const bool owner = unsigned(cw) == rank;
      wb::cluster::wait();  // phase 1: the peer has started
      if (!owner) {         // this warpgroup's partial to the owner of its outputs, the peer
        float4* to = wb::cluster::map(exchange, peer);
#pragma unroll
        for (int i = 0; i < Tile::kAcc / 4; ++i)
          to[i * 128 + t] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
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

// The pairs of tiles (clusters) of mode kMode on the shape.
inline long long clusters(ClusterMode mode, int bm, int bn, int M, int N) {
  const long long tm = ceil_div(M, bm), tn = ceil_div(N, bn);
  return mode == ClusterMode::Multicast ? tm * ((tn + 1) / 2) : tm * tn;
}

// v12's score (linear::score) for a tile in a pair: waves of clusters (at most sms / 2 at
// once) x (the CTA's K steps x the larger of its math and its L2 bytes per step + fill and
// epilogue + the cluster barriers); multicast loads half of x's box, split-K runs half the
// steps and sends 64 x WN FP32 partials to its peer (~32 bytes per cycle).
inline double score(ClusterMode mode, int bm, int bn, int M, int N, int K, int sms) {
  const double waves = std::ceil(double(clusters(mode, bm, bn, M, N)) / std::max(1, sms / 2));
  const int ktiles = ceil_div(K, 64), wn = bm == 128 ? bn : bn / 2;
  const double math = bm * bn / 32.0;
  if (mode == ClusterMode::Multicast) return waves * (ktiles * std::max(math, (bm / 2 + bn) * 2.0) + 1800.0);
  return waves * ((ktiles + 1) / 2 * std::max(math, (bm + bn) * 2.0) + 1800.0 + 8.0 * wn);
}

// Launches mode kMode on tile (BM, BN); false (nothing launched) when no cluster of two of
// the kernel fits on this GPU.
template <int BM, int BN, ClusterMode kMode, class Store>
bool launch(const bf16* x, const bf16* w, int M, int N, int K, const Store& store, cudaStream_t stream,
            const char* who) {
  using F = Form<BM, BN, kMode>;
  using T = typename F::Tile;
  auto* kernel = &cluster_gemm_kernel<T, kMode, Store>;
  static const bool fits = [&] {
    wb::allow_dynamic_smem(kernel, F::kSmem);
    return wb::cluster::max_active(kernel, T::kThreads, 2, F::kSmem) > 0;
  }();
  if (!fits) return false;
  thread_local linear::MapEntry map_x, map_w;
  const int a_rows = kMode == ClusterMode::Multicast ? BM / 2 : BM;  // multicast: half of x's box each
  const CUtensorMap& mx = linear::map_of(map_x, x, M, K, a_rows, who);
  const CUtensorMap& mw = linear::map_of(map_w, w, N, K, BN, who);
  const long long grid = 2 * clusters(kMode, BM, BN, M, N);
  if (grid > 0x7fffffffLL) return false;
  const wb::cluster::Config config(dim3(unsigned(grid)), T::kThreads, 2, stream, F::kSmem);
  CUDA_CHECK(cudaLaunchKernelEx(config.get(), kernel, mx, mw, M, N, K, store));
  return true;
}

// Mode `mode` on its cheapest tile; false when its cluster does not fit.
template <class Store>
bool run(ClusterMode mode, const bf16* x, const bf16* w, int M, int N, int K, const Store& store, int sms,
         cudaStream_t stream, const char* who) {
  bool done = false;
  linear::with_cheapest_tile<Tiles>(
      [&](int bm, int bn) { return score(mode, bm, bn, M, N, K, sms); },
      [&](auto tile) {
        using T = decltype(tile);
        done = mode == ClusterMode::Multicast
                   ? launch<T::BM, T::BN, ClusterMode::Multicast>(x, w, M, N, K, store, stream, who)
                   : launch<T::BM, T::BN, ClusterMode::SplitK>(x, w, M, N, K, store, stream, who);
      });
  return done;
}

// f(BM, BN) for each tile size of the tuple List.
template <class List, class F>
void for_each_size(F&& f) {
  std::apply([&](auto... size) { (f(decltype(size)::BM, decltype(size)::BN), ...); }, List{});
}

// The cheapest score of mode `mode` over its tiles.
inline double best_score(ClusterMode mode, int M, int N, int K, int sms) {
  double best = INFINITY;
  for_each_size<Tiles>([&](int bm, int bn) { best = std::min(best, score(mode, bm, bn, M, N, K, sms)); });
  return best;
}

}  // namespace cluster_linear

void linear_wgmma_cluster(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                          ClusterForm form, cudaStream_t stream) {
  const int sms = linear::sm_count();
  const bool pairs = N % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
  const BiasAheadStore store{{b, y, M, N, epi, pairs}};
  const char* who = "v15_wgmma_cluster";
  ClusterMode mode = ClusterMode::Multicast;
  if (form == ClusterForm::SplitK) {
    mode = ClusterMode::SplitK;
  } else if (form == ClusterForm::Auto) {
    // v13 (linear::score, the best of its tiles) unless a pair of CTAs scores lower.
    double v13 = INFINITY;
    cluster_linear::for_each_size<linear::Tiles>(
        [&](int bm, int bn) { v13 = std::min(v13, linear::score(bm, bn, M, N, K, sms)); });
    const double mc = cluster_linear::best_score(ClusterMode::Multicast, M, N, K, sms);
    const double sk = cluster_linear::best_score(ClusterMode::SplitK, M, N, K, sms);
    if (std::min(mc, sk) >= v13) {
      linear_wgmma_bias_ahead(x, w, b, y, M, N, K, epi, stream);
      return;
    }
    mode = sk < mc ? ClusterMode::SplitK : ClusterMode::Multicast;
  }
  if (!cluster_linear::run(mode, x, w, M, N, K, store, sms, stream, who)) {
    linear_wgmma_bias_ahead(x, w, b, y, M, N, K, epi, stream);  // no cluster of two fits
  }
}

}  // namespace ch09::solution::hopper
