// v12 (bonus, Hopper sm_90a only) — v8's warp-specialised implicit GEMM as a persistent kernel:
// one block an SM, four warpgroups (two producers, two consumers), walking 128-pixel tiles one
// after another, the next tile's loads issued while this tile's epilogue runs.
//
// Why (Nsight Compute on v8 and on cuDNN's fused graph, H200, batch 32; docs/ch10-conv.md):
//   * 7 x 7 layer: cuDNN runs 104 blocks of 384 threads (a producer and TWO consumer
//     warpgroups) on 128 x 64 tiles in 24.3 us; v8 runs 100 blocks of 256 threads (one
//     consumer warpgroup) on 64 x 128 tiles in 36.2 us.
//   * 56 x 56 layer: cuDNN runs a persistent grid of 120 blocks; v8 launches 784, each paying
//     its fill (the first stages' latency) and its epilogue with the tensor cores idle.
//
// What changed from v8 (the im2col gather and the filters' TMA box, the consumers' wgmma step
// and the filters' tensor map are v8's, shared through implicit_gemm_wgmma.cuh):
//   * the tile: always 128 pixels (two consumer warpgroups of 64 rows) x BN filters, BN = 64 or
//     128 picked per layer by a model of the busiest block (the launcher, below);
//   * TWO producer warpgroups, each thread gathering 4 of the 128 A rows a step. The first
//     form had v8's one producer warpgroup (8 rows a thread): a step of 128 A rows took ~0.6 us
//     whatever BN (7 x 7 layer: 46.4 us at (128, 64), 42.7 at (128, 128), against v8's 29.9
//     with 64-row steps), while v8 runs two blocks an SM, two producers, on the 56 x 56 layer.
//     The A gather of one warpgroup, not the tensor cores, set the pace;
//   * the grid: min(tiles, SMs) blocks of 512 threads, one an SM; block b takes tiles b, b +
//     grid, b + 2 grid, ... (filters fastest: neighbouring blocks read the same pixels). The
//     producers and the consumers walk the same tiles and the same steps, so the ring of stages
//     and its full / empty phases simply run on from one tile to the next: the producers start
//     the next tile's loads as soon as the consumers release the last stages of this one, while
//     they run the epilogue;
//   * the consumers release every stage (v8 leaves its last ones: nothing came after them);
//   * the epilogue on the accumulators in registers: fold, residual, ReLU, BF16 (the same
//     operations as v8's epilogue_store8, so the same bits), staged as BF16 in a tile of the
//     block's own after the stages (v8 staged FP32 over the idle stages, which here are being
//     filled with the next tile; BF16 halves the tile and leaves room for a stage more), then
//     16-byte stores. Each consumer warpgroup handles its own 64 rows between barriers of its
//     128 threads, so neither waits for the other. Each thread reads its channel's BN
//     parameters when the tile starts and folds them after the K loop (the loads wait under
//     it) into one of two sets, by the tile's parity, so one barrier less a tile.
//
// Per block (grid: min(tiles, SMs), 512 threads):
//
//   producer warpgroups  for each tile, each step t (stage and phase running on):  wait
//   (256 threads)        empty;  thread 0: expect_tx + TMA box of w;  all: 4 cp.async each
//                        (im2col rows, zero-fill);  cp.async.mbarrier.arrive.noinc on full
//   consumer warpgroup c for each tile:  each step: wait full;  fence.proxy.async;  4 x wgmma
//   (pixels 64 c .. +63) (k16);  commit;  wait_group 1;  release the step before's stage;
//                        after the last: wait_group 0, release its stage;  fold one channel's
//                        BN;  barrier (c);  fold + residual + ReLU in registers -> BF16 tile;
//                        barrier (c);  16-byte stores of its 64 rows
//
// Shared memory (1024-byte aligned), per block, one block an SM:
//   (128, 128): 5 stages of (16 + 16) KB, the 128 x 136 BF16 tile (34 KB): 195 KB
//   (128,  64): 7 stages of (16 +  8) KB, the 128 x  72 BF16 tile (18 KB): 187 KB
// The tile per shape: the fewest step-equivalents on the busiest block, ceil(tiles / grid)
// tiles each costing steps x the step (1 for (128, 64), kStep128 for (128, 128), in (128, 64)
// steps) plus a tile's fixed cost (kTile64, kTile128: the fill and the epilogue's share that
// the next tile's loads do not hide). At batch 32 on 132 SMs: (128, 64) on the 56 x 56 (784
// tiles of 9 steps) and 7 x 7 (104 tiles of 72) layers, (128, 128) on the 28 x 28 (196 of
// 18), 14 x 14 and stride-2 (98 of 36) and 1 x 1 (196 of 8) layers.
// Where the model's tile is (128, 64) and no block gets a second tile (tiles <= SMs), the
// launcher returns false and v8 runs: there is nothing to overlap after the one tile, and a
// (128, 64) step gathers 128 A rows for 64 filters, twice the A bytes per MAC of v8's (64, 128)
// step (a (128, 128) step gathers as few per MAC as v8's). Measured on an H200 (batch 32, the
// 7 x 7 layer, the only one of the six this sends to v8): 104 blocks of (128, 64) took 37.2 us,
// v8 30.1; every layer v12 keeps was at or below v8 (docs/ch10-conv.md).
//
// Edges as v8: rows past M read zeros (h0 = -2^30) and are not stored; channels past C and
// filters past K are zeros (cp.async zero-fill, TMA's fill), and filters past K not stored.
//
// Tried and not kept: a form handing the stages over in batches (each producer warpgroup took
// every other batch of 2-3 steps, waited for its own copies, fenced once and arrived, so that
// the consumers needed no fence): 4-14 % slower than this kernel on all six layers. The
// consumers' fence after each wait is not what paces the steps.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v12_*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v12_implicit_gemm_wgmma_persistent,v8_implicit_gemm_wgmma,cudnn_fused
#include <cuda.h>

#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/sm90.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "conv_common.cuh"
#include "hopper.cuh"
#include "implicit_gemm_wgmma.cuh"

namespace ch10::solution::hopper {
namespace {

using namespace wb::sm90;  // mbarriers, TMA, fences, wgmma, descriptors (harness/device/sm90.cuh)
using wb::ptx::smem_u32;

constexpr int kConsumers = 2;             // consumer warpgroups, 64 pixel rows each
constexpr int kLoaders = 2 * kProducers;  // two producer warpgroups: 4 of the 128 A rows each a thread

// One block: 128 pixels x BN filters, kStages stages, one block an SM.
template <int BN_, int kStages_>
struct PCfg {
  static constexpr int BM = 64 * kConsumers, BN = BN_, kStages = kStages_;
  static constexpr int kConsumerThreads = 128 * kConsumers;
  static constexpr int kThreads = kLoaders + kConsumerThreads;
  static constexpr int kAStage = BM * kRowBytes, kBStage = BN * kRowBytes;  // bytes
  static constexpr int kARows = BM / (kLoaders / 8);                        // A rows a producer thread
  static constexpr int kPipe = kStages * (kAStage + kBStage);
  static constexpr int kLdB = BN + 8;                // the BF16 output tile: values a row (16 bytes of padding)
  static constexpr int kOut = BM * kLdB * 2;         // the output tile, after the stages
  static constexpr int kSmem = kPipe + kOut + 1024;  // + the alignment slack
  static_assert(BN == 64 || BN == 128, "wgmma shapes: m64n64k16, m64n128k16");
  static_assert(kAStage % 1024 == 0 && kBStage % 1024 == 0, "every stage starts on a swizzle period");
  static_assert(kPipe % 16 == 0, "the output tile's 16-byte reads");
  static_assert(128 >= BN, "one thread of a warpgroup folds one channel");
  static_assert(32 % (BN / 8) == 0, "the epilogue: a warp covers whole rows of BN / 8 channel groups");
  static_assert(kSmem + 1024 + 8192 <= 228 * 1024, "one block an SM (with the static arrays)");
};

using PCfg128x128 = PCfg<128, 5>;
using PCfg128x64 = PCfg<64, 7>;

// grid (min(tiles, SMs)), block (T::kThreads), T::kSmem bytes of dynamic shared memory.
// tiles = ceil(M / 128) x tiles_n, tiles_n = ceil(K / BN); tile i is pixel tile i / tiles_n,
// filter tile i % tiles_n. C % 8 == 0, x and w 16-byte aligned; map_w: w as (C, R S, K), box
// (64, 1, BN), 128 B swizzle. vec_out: K % 8 == 0, y and residual 16-byte aligned.
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    conv_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap map_w, const bf16* __restrict__ x, BnParams bn,
                                 const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, int tiles_n,
                                 int tiles, bool vec_out) {
#if defined(CH10_SM90A)
  constexpr int kStages = T::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  __shared__ Folded sF[kConsumers][2][T::BN];  // each consumer warpgroup's, two sets by the tile's parity
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // the swizzle repeats every 1024 bytes
  auto a_stage = [&](int st) { return base + uint32_t(st * T::kAStage); };
  auto b_stage = [&](int st) { return base + uint32_t(kStages * T::kAStage + st * T::kBStage); };
  auto full = [&](int st) { return smem_u32(&full_bar[st]); };
  auto empty = [&](int st) { return smem_u32(&empty_bar[st]); };

  const ConvShape& s = d.s;
  const int tid = threadIdx.x, lane = tid % 32;
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar_init(full(st), kLoaders + 1);     // each producer's cp.async arrival + thread 0's expect_tx
      mbar_init(empty(st), kConsumers * 4);  // lane 0 of each consumer warp
    }
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();  // the only block-wide barrier: from here on the warpgroups go their own ways

  if (tid < kLoaders) {
    // --- producer: tile after tile, step after step; stage and phase run on across tiles.
    ImcolRows<T::kARows, kLoaders> rows;
    int stage = 0;
    uint32_t phase = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const int m0 = tile / tiles_n * T::BM, k0 = tile % tiles_n * T::BN;
      rows.start(d, m0, tid);
      int lr = 0, ls = 0, lc = 0;  // the step to load: tap (lr, ls) of the channels from lc
      for (int t = 0; t < d.steps; ++t) {
        mbar_wait(empty(stage), phase ^ 1);  // every consumer warp is done with the step kStages before
        if (tid == 0) {
          mbar_arrive_expect_tx(full(stage), T::kBStage);
          tma_load_3d(b_stage(stage), &map_w, lc, lr * s.S + ls, k0, full(stage));  // (64, 1, BN) box of w
        }
        rows.copy(x, s, lr, ls, lc, a_stage, stage);
        cp_async_mbar_arrive_noinc(full(stage));  // one arrival, when this thread's copies have landed
        next_step(s, lr, ls, lc);
        if (++stage == kStages) stage = 0, phase ^= 1;
      }
    }
    // Nothing left to issue: the consumers wait for the copies in flight (the full barriers);
    // this thread only leaves once its own copies are done.
    wb::ptx::cp_async_commit();
    wb::ptx::cp_async_wait<0>();
    return;
  }

  // --- consumers (implicit_gemm_wgmma.cuh): warpgroup cw computes pixel rows 64 cw .. 64 cw + 63
  // of each tile, all BN filters, and stores them itself; a proxy fence after each full wait
  // (the producers' cp.async copies are generic-proxy writes).
  bf16* ob = reinterpret_cast<bf16*>(smem_raw + (base - smem_u32(smem_raw)) + T::kPipe);  // the output tile
  persistent_consumers<T, kLoaders, true>(base, ob, full_bar, empty_bar, sF, bn, residual, y, d, tiles_n, tiles,
                                          vec_out, tid, lane);
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// The model's costs, in (128, 64) steps (see the header).
constexpr double kStep128 = 1.25;  // a (128, 128) step: a third more bytes, twice the MACs
constexpr double kTile64 = 2.0, kTile128 = 3.0;

Plan plan(const Dims& d, int bn, int sms) {
  return bn == 128 ? plan_persistent(d, 128, sms, kStep128, kTile128) : plan_persistent(d, 64, sms, 1.0, kTile64);
}

template <class T>
void launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d, const Plan& p,
            bool vec_out, cudaStream_t stream) {
  auto* kernel = &conv_wgmma_persistent_kernel<T>;
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kernel, T::kSmem);  // once per tile
  const CUtensorMap& map = filter_map(w, d.s, T::BN);
  kernel<<<p.grid, T::kThreads, T::kSmem, stream>>>(map, x, bn, residual, y, d, p.tiles_n, p.tiles, vec_out);
  WB_CHECK_LAUNCH();
}

}  // namespace

bool conv_bn_relu_persistent(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                             const ConvShape& s, cudaStream_t stream, PersistentTile tile) {
  const Dims d = dims_of(s);
  const bool vec_out = s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));
  const int sms = wb::sm_count();
  const Plan p64 = plan(d, 64, sms), p128 = plan(d, 128, sms);
  if (tile == PersistentTile::kAuto) {
    // The model's tile (a tie: (128, 64), fewer MACs wasted). Where it is (128, 64) and no
    // block gets a second tile, v8 runs instead (false): nothing comes after the one tile to
    // overlap, and a (128, 64) step gathers twice the A bytes per MAC of v8's (64, 128) step
    // (the header: the gather sets the pace).
    if (p128.cost < p64.cost) {
      tile = PersistentTile::k128x128;
    } else if (p64.tiles >= 0 && p64.tiles <= p64.grid) {
      return false;
    } else {
      tile = PersistentTile::k128x64;
    }
  }
  if (tile == PersistentTile::k128x128) {
    if (p128.tiles < 0) return false;
    launch<PCfg128x128>(x, w, bn, residual, y, d, p128, vec_out, stream);
  } else {
    if (p64.tiles < 0) return false;
    launch<PCfg128x64>(x, w, bn, residual, y, d, p64, vec_out, stream);
  }
  return true;
}

}  // namespace ch10::solution::hopper
