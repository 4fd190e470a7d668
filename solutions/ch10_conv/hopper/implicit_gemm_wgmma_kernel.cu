// v8 (bonus, Hopper sm_90a only) — v6's implicit GEMM on wgmma: a producer warpgroup fills a
// ring of shared-memory stages (the im2col gather by cp.async, the filters by TMA), consumer
// warpgroups multiply straight from shared memory, mbarriers between them.
//
// The GEMM, as in v6: M = N P Q output pixels (rows), N = K filters (columns), the sum over
// R S C in steps of 64 channels of one tap: step = (chunk of 64 channels c0, r, s), s fastest.
//
// What changed from v6, piece by piece (chapter 5's v6 introduces each Hopper tool on a plain
// GEMM: solutions/ch05_wmma/hopper/wgmma_tma_kernel.cu):
//   * wgmma instead of ldmatrix + mma.sync. A warpgroup (4 warps) multiplies its 64 pixels by
//     all BN filters of a 16-deep slice in ONE instruction (m64n64k16 or m64n128k16), reading
//     both operands from shared memory through 64-bit descriptors: no ldmatrix, no fragments
//     in registers, and the instruction runs asynchronously (issue 4 per step, commit, wait
//     for the one before: wgmma.wait_group 1), so a warpgroup's next wait on a barrier
//     overlaps its tensor-core work. v6's warps spent most of their issue slots on ldmatrix
//     and on 16 x 8 mma.sync tiles; here a consumer thread issues about 10 instructions per
//     64-deep step.
//   * warp specialisation. Warpgroup 0 only loads; warpgroups 1 (and 2) only compute and store.
//     v6's every warp did both, with a __syncthreads per step. Here nobody waits for the whole
//     block: each stage has a "full" and an "empty" mbarrier.
//   * the filters by TMA. w (K x R x S x C) is a 3-D tensor (C, R S, K) for the copy engine; one
//     thread asks for a (64 channels, 1 tap, BN filters) box per step, which lands in the
//     128-byte swizzle wgmma reads, zero-filled past C and past K.
//   * the activations by cp.async, written in the SAME swizzle. No TMA box describes an im2col
//     gather (each row is another pixel's tap, or zeros in the padding), so the 128 producer
//     threads keep v6's 16-byte cp.async copies with zero-fill, but store chunk c of tile row r
//     at wb::sm90::swizzle128_offset(r, c) (harness/device/sm90.cuh: the layout, and why it
//     is the one TMA and wgmma use). Each producer thread ends its stage with
//     cp.async.mbarrier.arrive.noinc: the "full" barrier completes when every thread's
//     copies have landed and the TMA box's bytes have arrived, without any producer thread
//     stalling on its own copies.
//   * the async proxy. cp.async writes shared memory through the ordinary ("generic") proxy;
//     wgmma reads it through the async proxy, which does not see those writes in order by
//     itself. So each consumer thread, after its wait on "full" and before its wgmmas,
//     executes fence.proxy.async.shared::cta. The TMA bytes need no fence (they are async-proxy
//     writes completed through the same barrier).
//   * the epilogue as v6's: the accumulators go to shared memory (the idle stages), then each
//     thread applies the folded BN (+ residual) to 8 channels of one pixel, one 16-byte store.
//
// Per block (grid: ceil(M / BM) pixel tiles x ceil(K / BN) filter tiles):
//
//   producer warpgroup     per step t (stage t % S):  wait empty; thread 0: expect_tx + TMA
//   (128 threads)          box of w;  all: BM / 16 cp.async each (im2col rows, zero-fill),
//                          then cp.async.mbarrier.arrive.noinc on full
//   consumer warpgroup c   per step t:  wait full;  fence.proxy.async;  4 x wgmma (k16 each)
//   (pixels 64 c .. +63)   on its 64 rows of A and all BN rows of B;  commit;  wait_group 1;
//                          each warp arrives on empty of step t - 1
//                          then: named barrier of the consumers; accumulators -> smem (FP32);
//                          named barrier; fold + residual + ReLU, 16-byte stores of y
//
// Barriers per stage: full (count 128 + 1: each producer thread's cp.async arrival, and
// thread 0's arrive.expect_tx; plus the TMA bytes) and empty (count 4 per consumer warpgroup:
// lane 0 of each consumer warp). Phases: a waiter on "full" waits for parity (t / S) & 1; the
// producer waits on "empty" for the opposite parity, which a fresh barrier passes at once, so
// the first S steps need no consumer.
//
// Shared memory (1024-byte aligned: the swizzle repeats every 8 rows of 128 bytes):
//   A stage: BM rows (pixels) x 64 channels, 128 bytes per row, swizzled      8 or 16 KB
//   B stage: BN rows (filters) x 64 channels, the same layout (one TMA box)   8 or 16 KB
//   after the loop: the BM x (BN + 8) FP32 output tile, over the stages.
// Descriptors (fields: chapter 5's kernel), A and B both K-major with the 128-byte swizzle,
// imm-trans-a = imm-trans-b = 0: start = the consumer's 64 rows (A) or the stage (B) + 32
// bytes per 16-deep slice kk; stride byte offset 1024 (one 8-row group to the next); the
// leading byte offset is unused in this mode (16).
//
// The tile per shape, picked as v6 picks (the fewest MACs on the busiest SM, ties to the larger):
//   (128, 128)  2 consumer warpgroups, 5 stages, 161 KB, 1 block per SM
//   ( 64, 128)  1 consumer warpgroup,  4 stages,  97 KB, 2 blocks per SM
//   (128,  64)  2 consumer warpgroups, 4 stages,  97 KB, 2 blocks per SM
//   ( 64,  64)  1 consumer warpgroup,  4 stages,  65 KB, 3 blocks per SM
// At batch 32 on 132 SMs: 56 x 56 (K = 64) -> (128, 64), 784 blocks; 28 x 28 and the 1 x 1 ->
// (64, 128), 392; 14 x 14 and the stride-2 layer -> (64, 64), 392; 7 x 7 -> (64, 128), 100.
// The 7 x 7 layer (M = 1,568 pixels, a 4,608-deep sum): the smaller M tile, not a split of the
// R S C sum over a cluster. With (64, 128) tiles each of 100 SMs computes one tile; a split
// into 2, 3 or 4 parts over a cluster, reduced through distributed shared memory, would give
// 200 - 400 smaller blocks whose busiest SM still walks 72 steps' worth of MACs (ceil of blocks
// over 132 SMs times the part), so the same time at best, plus a second barrier protocol
// (cluster arrive / wait around the DSMEM reduction) that can hang a kernel when one phase
// is wrong. A split only pays at 8 parts or more; that is left for a later step.
// The launcher takes a Tile to force one (the variant list's v8_implicit_gemm_wgmma_<tile>
// steps): the tests check each tile on the op's edges whatever this GPU's SM count would pick.
// No setmaxnreg: the consumers hold at most 64 FP32 accumulators each, which the launch bounds
// give without moving registers between warpgroups.
//
// Edges: pixel rows past M get h0 = -2^30 (every tap outside: zeros, as v6); channels past C
// are zeros in A (cp.async zero-fill) and in B (TMA's fill); filters past K are zeros in B and
// are never stored. Offsets into x, y and the residual are 64-bit.
//
// The pieces v12's persistent kernel shares (the wgmma step, the im2col gather, the staged
// epilogue's halves, the filters' tensor map) are in implicit_gemm_wgmma.cuh.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='conv2d_bn_relu/bf16/v8_implicit_gemm_wgmma.*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu
//      --impl=v8_implicit_gemm_wgmma,v6_implicit_gemm_pipelined,cudnn_fused cuobjdump --dump-sass
//      build/ch10/bin/ch10_bench | grep -c HGMMA
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/sm90.cuh"
#include "device/tensor_map.cuh"
#include "device/vec.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "conv_common.cuh"
#include "hopper.cuh"
#include "implicit_gemm_wgmma.cuh"

namespace ch10::solution::hopper {
namespace {

using namespace wb::sm90;  // mbarriers, TMA, fences, wgmma, descriptors (harness/device/sm90.cuh)
using wb::ptx::smem_u32;

// One block tile: BM = 64 kConsumers pixels x BN filters, kStages stages.
template <int kConsumers_, int BN_, int kStages_, int kMinBlocks_>
struct Cfg {
  static constexpr int kConsumers = kConsumers_, BM = 64 * kConsumers_, BN = BN_;
  static constexpr int kStages = kStages_, kMinBlocks = kMinBlocks_;
  static constexpr int kConsumerThreads = 128 * kConsumers;
  static constexpr int kThreads = kProducers + kConsumerThreads;
  static constexpr int kAStage = BM * kRowBytes, kBStage = BN * kRowBytes;  // bytes
  static constexpr int kARows = BM / (kProducers / 8);                      // A rows per producer thread
  static constexpr int kPipe = kStages * (kAStage + kBStage);
  static constexpr int kOut = BM * (BN + kOutPad) * 4;                // the FP32 output tile
  static constexpr int kSmem = (kPipe > kOut ? kPipe : kOut) + 1024;  // + the alignment slack
  static_assert(BN == 64 || BN == 128, "wgmma shapes below: m64n64k16, m64n128k16");
  static_assert(kAStage % 1024 == 0 && kBStage % 1024 == 0, "every stage starts on a swizzle period");
  static_assert((kProducers / 8) % 8 == 0, "a producer thread's rows are equal modulo 8: one XOR for all");
  static_assert(kThreads >= BN, "one thread folds the BN parameters of one channel");
  static_assert(32 % (BN / 8) == 0, "the epilogue: a warp covers whole rows of BN / 8 channel groups");
  static_assert(kStages >= 2, "a stage filling while another is read");
};

using Cfg128x128 = Cfg<2, 128, 5, 1>;
using Cfg64x128 = Cfg<1, 128, 4, 2>;
using Cfg128x64 = Cfg<2, 64, 4, 2>;
using Cfg64x64 = Cfg<1, 64, 4, 3>;

// grid (ceil(M / BM), ceil(K / BN)), block (T::kThreads), T::kSmem bytes of dynamic shared
// memory. C % 8 == 0, x and w 16-byte aligned; map_w: w as (C, R S, K), box (64, 1, BN), 128 B
// swizzle. vec_out: K % 8 == 0, y and residual 16-byte aligned.
template <class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    conv_wgmma_kernel(const __grid_constant__ CUtensorMap map_w, const bf16* __restrict__ x, BnParams bn,
                      const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, bool vec_out) {
#if defined(CH10_SM90A)
  constexpr int kStages = T::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  __shared__ Folded sF[T::BN];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // the swizzle repeats every 1024 bytes
  auto a_stage = [&](int st) { return base + uint32_t(st * T::kAStage); };
  auto b_stage = [&](int st) { return base + uint32_t(kStages * T::kAStage + st * T::kBStage); };
  auto full = [&](int st) { return smem_u32(&full_bar[st]); };
  auto empty = [&](int st) { return smem_u32(&empty_bar[st]); };

  const ConvShape& s = d.s;
  const int m0 = blockIdx.x * T::BM, k0 = blockIdx.y * T::BN;
  const int tid = threadIdx.x, lane = tid % 32;
  if (tid < T::BN && k0 + tid < s.K) sF[tid] = fold_bn(bn, k0 + tid);  // read after the barriers below
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar_init(full(st), kProducers + 1);      // each producer's cp.async arrival + thread 0's expect_tx
      mbar_init(empty(st), T::kConsumers * 4);  // lane 0 of each consumer warp
    }
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();  // the last block-wide barrier: from here on the warpgroups go their own ways

  if (tid < kProducers) {
    // --- producer: its share of the im2col rows (ImcolRows), the filters' box by thread 0.
    ImcolRows<T::kARows> rows;
    rows.start(d, m0, tid);
    int lr = 0, ls = 0, lc = 0;  // the step to load: tap (lr, ls) of the channels from lc
    int stage = 0;
    uint32_t phase = 0;
    for (int t = 0; t < d.steps; ++t) {
      mbar_wait(empty(stage), phase ^ 1);  // every consumer warp is done with step t - kStages
      if (tid == 0) {
        mbar_arrive_expect_tx(full(stage), T::kBStage);
        tma_load_3d(b_stage(stage), &map_w, lc, lr * s.S + ls, k0, full(stage));  // (64, 1, BN) box of w
      }
      rows.copy(x, s, lr, ls, lc, a_stage, stage);
      // One arrival on full, made when this thread's copies have landed.
      cp_async_mbar_arrive_noinc(full(stage));
      next_step(s, lr, ls, lc);
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
    // Nothing left to issue. The consumers wait on every stage's barrier before they touch the
    // buffers again, so the copies still in flight are theirs to wait for; this thread only
    // leaves once its own copies are done.
    wb::ptx::cp_async_commit();
    wb::ptx::cp_async_wait<0>();
    return;
  }

  // --- consumers. Warpgroup cw computes pixel rows 64 cw .. 64 cw + 63 of the tile, all BN
  // filters: acc[4 j + e] as chapter 5 describes (warp w: rows 16 w + g and + 8, filters 8 j +
  // 2 q and + 1; g = lane / 4, q = lane % 4).
  const int cw = tid / 128 - 1, warp = (tid % 128) / 32;
  float acc[T::BN / 2];
#pragma unroll
  for (int i = 0; i < T::BN / 2; ++i) acc[i] = 0.0f;
  int stage = 0, held = -1;  // held: the stage whose wgmmas may still be reading shared memory
  uint32_t phase = 0;
  for (int t = 0; t < d.steps; ++t) {
    mbar_wait(full(stage), phase);  // the TMA bytes and every producer's copies of step t are in
    fence_async_shared();           // ... and visible to the async proxy, which wgmma reads through
    pin(acc);
    wgmma_fence();
    consume_step<T::BN>(acc, a_stage(stage) + uint32_t(cw * 64 * kRowBytes), b_stage(stage));
    wgmma_commit();
    wgmma_wait<1>();  // step t - 1's wgmmas are done reading their stage
    pin(acc);
    if (held >= 0 && lane == 0) mbar_arrive(empty(held));
    held = stage;
    if (++stage == kStages) stage = 0, phase ^= 1;
  }
  wgmma_wait<0>();
  pin(acc);
  // The last stages are not released: the producer has no step left to put in them.

  // --- epilogue, 1: the accumulators into a BM x (BN + 8) FP32 tile over the stages, once
  // every consumer warpgroup is done with them (the producer wrote its last bytes before the
  // barriers the consumers waited on). The padding puts the 4 rows a half-warp writes 8 banks
  // apart. The stages were last written (TMA) and read (wgmma) by the async proxy: a proxy
  // fence orders those accesses before these ordinary stores.
  named_barrier(1, T::kConsumerThreads);
  fence_async_shared();
  float* out = reinterpret_cast<float*>(smem_raw + (base - smem_u32(smem_raw)));
  park_accumulators<T::BN>(acc, out, cw * 64 + warp * 16 + lane / 4, lane % 4);
  named_barrier(1, T::kConsumerThreads);

  // --- epilogue, 2: consumer thread ct takes channels 8 c8 .. 8 c8 + 7 of tile rows r0, r0 +
  // kRowsPerPass, ... (v6's order: lanes 4-7 of each group of 8 read their two float4 halves the
  // other way round, so a quarter-warp covers the 32 banks once).
  constexpr int kPerRow = T::BN / 8, kRowsPerPass = T::kConsumerThreads / kPerRow;
  const int ct = tid - kProducers;
  const int c8 = ct % kPerRow, r0 = ct / kPerRow, half = (lane / 4) % 2;
  const int kc = k0 + c8 * 8;  // the first of the thread's 8 channels
  if (kc >= s.K) return;
#pragma unroll 2
  for (int r = r0; r < T::BM; r += kRowsPerPass) {
    const int m = m0 + r;
    if (m >= d.M) break;
    store8_staged<T::BN>(out, r, c8, half, &sF[c8 * 8], residual, y, m, kc, s.K, vec_out);
  }
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

}  // namespace

// --- host side -------------------------------------------------------------------------

namespace {

// w (K x R x S x C, BF16) as a 3-D tensor (C innermost, R S taps, K filters) read in (64, 1,
// box_k) boxes with the 128-byte swizzle; zeros outside the tensor (channels past C, filters
// past K). Row strides C x 2 and R S C x 2 bytes: multiples of 16 when C % 8 == 0.
CUtensorMap make_filter_map(const bf16* w, const ConvShape& s, int box_k) {
  const cuuint64_t dims[3] = {cuuint64_t(s.C), cuuint64_t(s.R) * s.S, cuuint64_t(s.K)};
  const cuuint64_t strides[2] = {cuuint64_t(s.C) * sizeof(bf16), cuuint64_t(s.R) * s.S * s.C * sizeof(bf16)};
  const cuuint32_t box[3] = {kBK, 1, cuuint32_t(box_k)};
  return wb::sm90::bf16_swizzled_map_3d(w, dims, strides, box, "the Hopper convolution (v8, v12)",
                                        "filters K = " + std::to_string(s.K) + ", R x S = " + std::to_string(s.R) +
                                            " x " + std::to_string(s.S) + ", C = " + std::to_string(s.C));
}

// The map of the last call with one box, so that timing a call does not time its encoding.
struct MapCache {
  const bf16* w = nullptr;
  int C = 0, RS = 0, K = 0;
  CUtensorMap map{};
};

}  // namespace

// One cache per box (64 or 128 filters): v8 and v12 may take different boxes of the same w.
const CUtensorMap& filter_map(const bf16* w, const ConvShape& s, int box_k) {
  static MapCache caches[2];
  MapCache& cache = caches[box_k == 128 ? 1 : 0];
  if (cache.w != w || cache.C != s.C || cache.RS != s.R * s.S || cache.K != s.K) {
    cache.map = make_filter_map(w, s, box_k);
    cache.w = w, cache.C = s.C, cache.RS = s.R * s.S, cache.K = s.K;
  }
  return cache.map;
}

namespace {

template <class T>
void launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d, bool vec_out,
            cudaStream_t stream) {
  auto* kernel = &conv_wgmma_kernel<T>;
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kernel, T::kSmem);  // once per tile
  const CUtensorMap& map = filter_map(w, d.s, T::BN);
  const dim3 grid(unsigned(wb::ceil_div(d.M, T::BM)), unsigned(wb::ceil_div(d.s.K, T::BN)));
  kernel<<<grid, T::kThreads, T::kSmem, stream>>>(map, x, bn, residual, y, d, vec_out);
  WB_CHECK_LAUNCH();
}

}  // namespace

bool supports(const ConvShape& s, const bf16* x, const bf16* w) {
  return s.C % 8 == 0 && wb::aligned16(x) && wb::aligned16(w);
}

void conv_bn_relu(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const ConvShape& s,
                  cudaStream_t stream, Tile tile) {
  const Dims d = dims_of(s);
  const bool vec_out = s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));

  if (tile == Tile::kAuto) {
    // The tile whose busiest SM does the least; on a tie the one listed first (the larger).
    const Tile tiles[4] = {Tile::k128x128, Tile::k64x128, Tile::k128x64, Tile::k64x64};
    tile = tiles[pick_tile<Cfg128x128, Cfg64x128, Cfg128x64, Cfg64x64>(d.M, s.K, wb::sm_count())];
  }
  switch (tile) {
    case Tile::k128x128:
      launch<Cfg128x128>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    case Tile::k64x128:
      launch<Cfg64x128>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    case Tile::k128x64:
      launch<Cfg128x64>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    default:
      launch<Cfg64x64>(x, w, bn, residual, y, d, vec_out, stream);
      break;
  }
}

}  // namespace ch10::solution::hopper
