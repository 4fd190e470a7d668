// v13 (bonus, Hopper sm_90a only) — v12's persistent kernel with the im2col gather handed to the
// copy engine: one TMA copy in im2col mode brings a step's 128 rows of A, so one thread issues
// every copy of the block, and the 256 gathering threads of v12's two producer warpgroups are gone.
//
// Why (docs/ch10-conv.md, v12's numbers on an H200, batch 32): v12's step of 128 A rows took
// 0.5-0.7 us (37.2 us / 54 steps a block on the 56 x 56 layer, 26.1 us / 36 steps at (128, 128)
// on the 14 x 14 one), where cuDNN does the 7 x 7 layer's 128 x 64 steps in 0.34 us, and one
// producer warpgroup instead of two made v12's steps 30 % slower: the gather (1,024 16-byte
// cp.async a step, each an address computed, a predicate, an L1 request) sets the pace, not the
// tensor cores (a (128, 64) step is 256 tensor-core cycles, about 0.14 us).
//
// TMA's im2col mode (PTX ISA: cp.async.bulk.tensor, "im2col" load mode; the host's map:
// cuTensorMapEncodeIm2col). x, NHWC, is a 4-D tensor (C, W, H, N) to the copy engine, with a
// bounding box per image: the positions of a filter's tap (0, 0) for every output pixel,
//
//   w from -pad to -pad + (Q - 1) stride  (lower corner -pad, upper corner -pad + (Q - 1) stride
//   h from -pad to -pad + (P - 1) stride   - (W - 1); the same for h), step: the traversal stride
//
// One copy names the first pixel of the tile (its tap (0, 0) at (c, w0, h0, n)) and the tap
// (offsets s, r); the engine walks 128 positions through the box as the GEMM's rows run (q, then
// p, then the next image), reads the 64 channels from c of each at (w + s, h + r), zeros where
// that is in the padding or past C, and past the last image, and writes row i of the stage in
// the 128-byte swizzle: exactly the A stage v12's threads built with 1,024 cp.async.
//
//   producer warpgroup (thread 0)          consumer warpgroups 1, 2 (v12's, implicit_gemm_wgmma.cuh)
//   for each tile, each step:              for each tile, each step: wait full; 4 wgmma;
//     wait empty[s]                          commit; wait the step before; release its stage
//     expect_tx (A 16 KB + B 8 or 16 KB)    (no proxy fence: every byte of a stage is the copy
//     im2col box of x -> A[s]                engine's, completed through the barrier)
//     tiled box of w  -> B[s]              epilogue: registers -> BF16 tile -> 16-byte stores
//
// What changed from v12:
//   * A by one TMA copy a step (im2col mode) instead of 4 cp.async from each of 256 threads; the
//     full barrier counts one arrival (thread 0's expect_tx) and the copies' bytes;
//   * a producer warpgroup of one working thread (384 threads a block, not 512); the other 127
//     leave at once (their registers go to the consumers' bound);
//   * the consumers skip the proxy fence after each full wait (no generic-proxy writes);
//   * stages: 8 of 24 KB at (128, 64) (v12: 7), 5 of 32 KB at (128, 128);
//   * pairs: two CTAs of a cluster take neighbouring pixel tiles of the same filter tile, and
//     each fetches half of the step's filter box for both (TMA multicast: one read of L2 feeds
//     two SMs). A step's operands cost L2 16 KB of A and a half of B per SM instead of a whole
//     B: about 115 MB of A and B a layer at batch 32 become 87 (the (128, 128) layers; 173 ->
//     144 MB on the 56 x 56 one). A CTA's full barrier counts its A, its half of B and its peer's;
//     a stage is released on both CTAs' empty barriers (16 arrivals), so that neither refills
//     it before both have read it; the pair leaves together (a cluster barrier), since the
//     other's consumers may still arrive on this one's barriers. An odd last pixel tile leaves
//     the second CTA of its pair a tile past M: zeros, never stored.
//
// Why pairs: at batch 32 a layer's A and B cost about 115 MB of L2 reads at either tile (9 taps
// of x, and the filters once per pixel tile), and v12's steps consumed them at about 4-5 TB/s
// on the busy SMs: bytes read from L2 per MAC are a limit of their own.
//
// Shared memory (1024-byte aligned), per block, one block an SM:
//   (128, 128): 5 stages of (16 + 16) KB, the 128 x 136 BF16 tile (34 KB): 195 KB
//   (128,  64): 8 stages of (16 +  8) KB, the 128 x  72 BF16 tile (18 KB): 211 KB
//
// Edges: what an im2col map can describe: a stride of at most 8 (the traversal stride), corners
// and padding within the map's signed 8-bit corner offsets, taps within its offsets; anything
// else goes to v12 (the launcher returns false). Channels past C and filters past K are zeros
// (the maps' fill); pixel rows past M are the engine's walk past the last image: zeros, never
// stored.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v13_*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v13_implicit_gemm_im2col_tma,v12_implicit_gemm_wgmma_persistent,cudnn_fused
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "device/cluster.cuh"
#include "device/sm90.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "conv_common.cuh"
#include "hopper.cuh"
#include "implicit_gemm_wgmma.cuh"

namespace ch10::solution::hopper {
namespace {

using namespace wb::sm90;  // mbarriers, TMA, fences (harness/device/sm90.cuh)
using wb::ptx::smem_u32;

constexpr int kIssuers = 128;  // the producer warpgroup (thread 0 issues; the rest wait or leave)

// One block: 128 pixels x BN filters, kStages stages, one block an SM. kPairing (pair_tile):
// 0 alone; 1 a pair of CTAs (a cluster) sharing its filter tile, each fetching half of it for
// both; 2 a pair sharing its pixel tile, each fetching half of its rows. kResident: the block
// keeps one filter tile for all its tiles, every step's B box loaded once, after the A stages
// (steps x kBStage bytes more, at launch); the stages hold A alone.
template <int BN_, int kStages_, int kPairing_, bool kResident_ = false>
struct ICfg {
  static constexpr int BM = 128, BN = BN_, kStages = kStages_, kPairing = kPairing_, kCluster = kPairing ? 2 : 1;
  static constexpr bool kResident = kResident_;
  static constexpr int kThreads = kIssuers + 256;                           // + two consumer warpgroups
  static constexpr int kAStage = BM * kRowBytes, kBStage = BN * kRowBytes;  // bytes
  static constexpr int kAPart = kAStage / (kPairing == 2 ? 2 : 1);          // the A bytes one CTA fetches
  static constexpr int kBPart = kBStage / (kPairing == 1 ? 2 : 1);          // the B bytes one CTA fetches
  static constexpr int kPipe = kStages * (kAStage + (kResident ? 0 : kBStage));
  static constexpr int kLdB = BN + 8;                // the BF16 output tile: values a row (16 bytes of padding)
  static constexpr int kOut = BM * kLdB * 2;         // the output tile, after the stages (and the filters)
  static constexpr int kSmem = kPipe + kOut + 1024;  // + the alignment slack (+ the resident filters)
  // The most steps whose filters fit beside the stages (8 KB kept for the static arrays).
  static constexpr int kMaxResident = kResident ? (227 * 1024 - 8192 - kSmem) / kBStage : 0;
  static_assert(BN == 64 || BN == 128, "wgmma shapes: m64n64k16, m64n128k16");
  static_assert(kPairing >= 0 && kPairing <= 2, "alone, or a pair sharing B or A");
  static_assert(!kResident || kCluster == 1, "resident filters: a block alone");
  static_assert(kAPart % 1024 == 0 && kBPart % 1024 == 0, "every stage (and half) starts on a swizzle period");
  static_assert(kPipe % 16 == 0, "the output tile's 16-byte reads");
  static_assert(32 % (BN / 8) == 0, "the epilogue: a warp covers whole rows of BN / 8 channel groups");
  static_assert(kSmem + 1024 + 8192 <= 228 * 1024, "one block an SM (with the static arrays)");
};

using ICfg128x128 = ICfg<128, 5, 0>;
using ICfg128x64 = ICfg<64, 8, 0>;
using ICfg128x128Pair = ICfg<128, 5, 1>;
using ICfg128x64Pair = ICfg<64, 8, 1>;
using ICfg128x128PairA = ICfg<128, 5, 2>;
using ICfg128x64PairA = ICfg<64, 8, 2>;
using ICfg128x64Resident = ICfg<64, 8, 0, true>;
static_assert(ICfg128x64Resident::kMaxResident >= 9, "a 3 x 3 layer of up to 64 channels keeps its filters");

// The second half of a cluster barrier that threads reach at different times (the producer
// warp's lanes after lane 0's loop): not .aligned.
__device__ __forceinline__ void cluster_sync_unaligned() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// grid (T::kCluster x the clusters), block (T::kThreads), T::kSmem bytes of dynamic shared
// memory (+ steps x kBStage with resident filters). `tiles` counts the tiles alone, the units
// of two tiles in pairs; pair_tile (implicit_gemm_wgmma.cuh) maps them to pixel and filter
// tiles, tiles_n being the filter tiles (pairs of them where a pair shares its pixel tile). A
// tile past M or K (an odd count in pairs) computes zeros, never stored. map_x: x as (C, W, H,
// N) in im2col mode, 64 channels x 128 pixels a copy (64 where a pair shares its pixels), 128 B
// swizzle; map_w: w as (C, R S, K), box (64, 1, BN, or BN / 2 where a pair shares its filters),
// 128 B swizzle. vec_out: K % 8 == 0, y and residual 16-byte aligned.
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    conv_im2col_tma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                           BnParams bn, const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, int tiles_n,
                           int tiles, bool vec_out) {
#if defined(CH10_SM90A)
  constexpr int kStages = T::kStages, kCluster = T::kCluster, kPairing = T::kPairing;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages], b_bar;  // b_bar: resident filters
  __shared__ Folded sF[2][2][T::BN];  // each consumer warpgroup's, two sets by the tile's parity
  // The swizzle repeats every 1024 bytes; in a pair, both CTAs' stages are at the same address.
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;

  const ConvShape& s = d.s;
  const int tid = threadIdx.x, lane = tid % 32;
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar_init(smem_u32(&full_bar[st]), 1);              // thread 0's expect_tx (and the copies' bytes)
      mbar_init(smem_u32(&empty_bar[st]), 8 * kCluster);  // lane 0 of each consumer warp (of both CTAs)
    }
    mbar_init(smem_u32(&b_bar), 1);
    fence_mbarrier_init();  // visible to the copy engine (and to the other CTA)
  }
  // The only block-wide barrier (cluster-wide in a pair: no copy or arrival reaches a barrier
  // before it is initialised); from here on the warpgroups go their own ways.
  if constexpr (kCluster == 2) {
    cluster_sync_unaligned();
  } else {
    __syncthreads();
  }

  if (tid < kIssuers) {
    if (tid == 0) {
      // --- the producer, one thread: tile after tile, step after step; stage and phase run on
      // across tiles. A tile's first pixel m0 = (n, p, q) puts its tap (0, 0) at (w0, h0).
      [[maybe_unused]] unsigned rank = 0;
      int first = blockIdx.x, next = gridDim.x;
      if constexpr (kCluster == 2) rank = cluster_rank(), first = blockIdx.x / 2, next = gridDim.x / 2;
      const int pq_count = d.P * d.Q;
      if constexpr (T::kResident) {  // every step's box of the block's one filter tile, once
        const uint32_t bar = smem_u32(&b_bar);
        const int k0 = first % tiles_n * T::BN;  // the grid is a multiple of tiles_n
        mbar_arrive_expect_tx(bar, uint32_t(d.steps * T::kBStage));
        int lr = 0, ls = 0, lc = 0;
        for (int t = 0; t < d.steps; ++t) {
          tma_load_3d(base + uint32_t(T::kPipe + t * T::kBStage), &map_w, lc, lr * s.S + ls, k0, bar);
          next_step(s, lr, ls, lc);
        }
      }
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = first; tile < tiles; tile += next) {
        int m0, k0;
        pair_tile<kPairing>(tile, tiles_n, rank, T::BM, T::BN, m0, k0);
        if constexpr (kPairing == 2) m0 += int(rank) * (T::BM / 2);  // the half of the rows this CTA fetches
        const int n = m0 / pq_count, pq = m0 - n * pq_count, p = pq / d.Q, q = pq - p * d.Q;
        const int w0 = q * s.stride - s.pad, h0 = p * s.stride - s.pad;
        int lr = 0, ls = 0, lc = 0;  // the step to load: tap (lr, ls) of the channels from lc
        for (int t = 0; t < d.steps; ++t) {
          const uint32_t full = smem_u32(&full_bar[stage]);
          const uint32_t b_dst = base + uint32_t(kStages * T::kAStage + stage * T::kBStage);
          mbar_wait(smem_u32(&empty_bar[stage]), phase ^ 1);  // every consumer warp (of both CTAs) is done with it
          mbar_arrive_expect_tx(full, T::kAStage + (T::kResident ? 0 : T::kBStage));
          const uint32_t a_dst = base + uint32_t(stage * T::kAStage);
          if constexpr (kPairing == 2) {  // this CTA's 64 of the 128 rows, into both CTAs
            tma_load_im2col_4d_multicast(a_dst + rank * T::kAPart, &map_x, lc, w0, h0, n, uint16_t(ls), uint16_t(lr),
                                         full, uint16_t(3));
          } else {
            tma_load_im2col_4d(a_dst, &map_x, lc, w0, h0, n, uint16_t(ls), uint16_t(lr), full);
          }
          if constexpr (T::kResident) {
            // the filters are resident
          } else if constexpr (kPairing == 1) {  // this CTA's half of the (64, 1, BN) box of w, into both CTAs
            tma_load_3d_multicast(b_dst + rank * T::kBPart, &map_w, lc, lr * s.S + ls, k0 + int(rank) * (T::BN / 2),
                                  full, uint16_t(3));
          } else {
            tma_load_3d(b_dst, &map_w, lc, lr * s.S + ls, k0, full);  // (64, 1, BN) box of w
          }
          next_step(s, lr, ls, lc);
          if (++stage == kStages) stage = 0, phase ^= 1;
        }
      }
    }
    if constexpr (kCluster == 1) return;
  } else {
    // --- consumers (implicit_gemm_wgmma.cuh, as v12's): no proxy fence, every byte of a stage
    // comes from the copy engine and completes through the full barrier.
    const int b_bytes = T::kResident ? d.steps * T::kBStage : 0;  // the resident filters, after the stages
    bf16* ob = reinterpret_cast<bf16*>(smem_raw + (base - smem_u32(smem_raw)) + T::kPipe + b_bytes);  // output tile
    persistent_consumers<T, kIssuers, false, kPairing, T::kResident>(base, ob, full_bar, empty_bar, sF, bn, residual, y,
                                                                     d, tiles_n, tiles, vec_out, tid, lane,
                                                                     base + uint32_t(T::kPipe), &b_bar);
  }
  // A pair leaves together: the other CTA's consumers may still arrive on this one's barriers.
  if constexpr (kCluster == 2) cluster_sync_unaligned();
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// The model's costs, in (128, 64) steps (implicit_gemm_wgmma.cuh, plan_persistent): v12's.
constexpr double kStep128 = 1.25;  // a (128, 128) step: a third more bytes, twice the MACs
constexpr double kTile64 = 2.0, kTile128 = 3.0;

// cuTensorMapEncodeIm2col, reached through the runtime (no link against libcuda).
PFN_cuTensorMapEncodeIm2col_v12000 im2col_encoder() {
  static const PFN_cuTensorMapEncodeIm2col_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &p, 12000, cudaEnableDefault, &found));
    return found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeIm2col_v12000>(p) : nullptr;
  }();
  return fn;
}

// The corners of the bounding box along one axis (input size `in`, output size `out`): the tap
// (0, 0) of output 0 sits at -pad, that of the last output at -pad + (out - 1) stride, which
// the map states as an offset from in - 1. Both must fit the map's signed 8-bit corners.
bool corners(int in, int out, const ConvShape& s, int& lower, int& upper) {
  lower = -s.pad;
  const long long up = -(long long)s.pad + (long long)(out - 1) * s.stride - (in - 1);
  upper = int(up);
  return lower >= -128 && up >= -128 && up <= 127;
}

// x (N x H x W x C, BF16) in im2col mode: (C, W, H, N), 64 channels x `pixels` pixels a copy,
// the 128-byte swizzle, zeros outside. False where the shape is outside what the map describes.
bool make_im2col_map(CUtensorMap& map, const bf16* x, const ConvShape& s, int P, int Q, int pixels) {
  int lower[2], upper[2];  // (w, h): innermost first, as the dimensions
  if (s.stride > 8 || s.R > 64 || s.S > 64 || !corners(s.W, Q, s, lower[0], upper[0]) ||
      !corners(s.H, P, s, lower[1], upper[1])) {
    return false;
  }
  const auto encode = im2col_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[4] = {cuuint64_t(s.C), cuuint64_t(s.W), cuuint64_t(s.H), cuuint64_t(s.N)};
  const cuuint64_t strides[3] = {cuuint64_t(s.C) * sizeof(bf16), cuuint64_t(s.W) * s.C * sizeof(bf16),
                                 cuuint64_t(s.H) * s.W * s.C * sizeof(bf16)};
  const cuuint32_t element_strides[4] = {1, cuuint32_t(s.stride), cuuint32_t(s.stride), 1};
  const CUresult r =
      encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<bf16*>(x), dims, strides, lower, upper, kBK,
             cuuint32_t(pixels), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// The map of the last call (one cache for 128 pixels a copy, one for 64), so that timing a
// call does not time its encoding.
struct Im2colCache {
  const bf16* x = nullptr;
  ConvShape s{};
  bool ok = false;
  CUtensorMap map{};
};

const CUtensorMap* activation_map(const bf16* x, const ConvShape& s, int P, int Q, int pixels) {
  static Im2colCache caches[2];
  Im2colCache& cache = caches[pixels == 64 ? 1 : 0];
  const ConvShape& c = cache.s;
  if (cache.x != x || c.N != s.N || c.H != s.H || c.W != s.W || c.C != s.C || c.R != s.R || c.S != s.S ||
      c.stride != s.stride || c.pad != s.pad) {
    cache.ok = make_im2col_map(cache.map, x, s, P, Q, pixels);
    cache.x = x, cache.s = s;
  }
  return cache.ok ? &cache.map : nullptr;
}

// A launch alone (one CTA a tile) or in pairs (one cluster of two CTAs a unit of two tiles):
// the tiles or units, the grid, and the model's cost of its busiest block.
template <class T>
Plan plan_for(const Dims& d, int sms, int clusters) {
  const double step = T::BN == 128 ? kStep128 : 1.0, fixed = T::BN == 128 ? kTile128 : kTile64;
  if constexpr (T::kPairing == 0) {
    return plan_persistent(d, T::BN, sms, step, fixed);
  } else {
    Plan p{};
    const long long m_tiles = wb::ceil_div(d.M, 128), k_tiles = wb::ceil_div(d.s.K, T::BN);
    p.tiles_n = int(T::kPairing == 1 ? k_tiles : wb::ceil_div(k_tiles, 2LL));
    const long long units = (T::kPairing == 1 ? wb::ceil_div(m_tiles, 2LL) : m_tiles) * p.tiles_n;
    p.tiles = units < (1LL << 30) ? int(units) : -1;
    const long long pairs = std::min<long long>(units, std::max(clusters, 1));
    p.grid = int(2 * pairs);
    p.cost = double(wb::ceil_div(units, pairs)) * (d.steps * step + fixed);
    return p;
  }
}

// The pairs of one-block-an-SM CTAs the GPU holds at once (a cluster's CTAs share a GPC, so
// fewer than SMs / 2 where a GPC's SM count is odd); once per configuration.
template <class T>
int pair_slots() {
  static const int n = [] {
    auto* kernel = &conv_im2col_tma_kernel<T>;
    wb::allow_dynamic_smem(kernel, T::kSmem);
    return wb::cluster::max_active(kernel, T::kThreads, 2, T::kSmem);
  }();
  return n;
}

template <class T>
void launch(const CUtensorMap& map_x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
            const Plan& p, bool vec_out, cudaStream_t stream) {
  auto* kernel = &conv_im2col_tma_kernel<T>;
  [[maybe_unused]] static const bool raised =
      wb::allow_dynamic_smem(kernel, T::kSmem + T::kMaxResident * T::kBStage);  // once per configuration
  const CUtensorMap& map_w = filter_map(w, d.s, T::BN / (T::kPairing == 1 ? 2 : 1));
  if constexpr (T::kCluster == 1) {
    const int smem = T::kSmem + (T::kResident ? d.steps * T::kBStage : 0);
    kernel<<<p.grid, T::kThreads, smem, stream>>>(map_x, map_w, bn, residual, y, d, p.tiles_n, p.tiles, vec_out);
    WB_CHECK_LAUNCH();
  } else {
    const wb::cluster::Config config(dim3(p.grid), T::kThreads, 2, stream, T::kSmem);
    CUDA_CHECK(cudaLaunchKernelEx(config.get(), kernel, map_x, map_w, bn, residual, y, d, p.tiles_n, p.tiles, vec_out));
  }
}

// The launch of one schedule, T64 or T128 (the (128, 64) and (128, 128) tiles) as `tile` says or
// as the model picks. False when the shape has too many tiles (or no pair fits the GPU).
template <class T64, class T128>
bool run_schedule(const CUtensorMap& map_x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
                  PersistentTile tile, bool vec_out, cudaStream_t stream) {
  const int sms = wb::sm_count();
  const int slots64 = T64::kCluster == 2 ? pair_slots<T64>() : 0,
            slots128 = T128::kCluster == 2 ? pair_slots<T128>() : 0;
  const Plan p64 = plan_for<T64>(d, sms, slots64), p128 = plan_for<T128>(d, sms, slots128);
  if (tile == PersistentTile::kAuto) tile = p128.cost < p64.cost ? PersistentTile::k128x128 : PersistentTile::k128x64;
  const Plan& p = tile == PersistentTile::k128x128 ? p128 : p64;
  if (p.tiles < 0 || p.grid < T64::kCluster) return false;
  if (tile == PersistentTile::k128x128) {
    launch<T128>(map_x, w, bn, residual, y, d, p, vec_out, stream);
  } else {
    launch<T64>(map_x, w, bn, residual, y, d, p, vec_out, stream);
  }
  return true;
}

}  // namespace

bool conv_bn_relu_im2col(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const ConvShape& s,
                         cudaStream_t stream, PersistentTile tile, Im2colSchedule schedule) {
  const Dims d = dims_of(s);
  if (schedule == Im2colSchedule::kAuto) schedule = Im2colSchedule::kPairs;
  const CUtensorMap* map_x = activation_map(x, s, d.P, d.Q, schedule == Im2colSchedule::kPairsA ? 64 : 128);
  if (map_x == nullptr) return false;
  const bool vec_out = s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));
  switch (schedule) {
    case Im2colSchedule::kResident: {
      // (128, 64) tiles, one filter tile a block (the grid a multiple of the filter tiles), every
      // step's filters beside the stages; else the (128, 64) tiles alone.
      const Plan p = plan_for<ICfg128x64Resident>(d, wb::sm_count(), 0);
      if (p.tiles < 0) return false;
      if (p.grid % p.tiles_n == 0 && d.steps <= ICfg128x64Resident::kMaxResident) {
        launch<ICfg128x64Resident>(*map_x, w, bn, residual, y, d, p, vec_out, stream);
        return true;
      }
      return run_schedule<ICfg128x64, ICfg128x128>(*map_x, w, bn, residual, y, d, PersistentTile::k128x64, vec_out,
                                                   stream);
    }
    case Im2colSchedule::kPairs:
      return run_schedule<ICfg128x64Pair, ICfg128x128Pair>(*map_x, w, bn, residual, y, d, tile, vec_out, stream);
    case Im2colSchedule::kPairsA:
      return run_schedule<ICfg128x64PairA, ICfg128x128PairA>(*map_x, w, bn, residual, y, d, tile, vec_out, stream);
    default:
      return run_schedule<ICfg128x64, ICfg128x128>(*map_x, w, bn, residual, y, d, tile, vec_out, stream);
  }
}

}  // namespace ch10::solution::hopper
