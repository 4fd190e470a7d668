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
//   * resident filters: where a block keeps one filter tile for all its tiles (the grid a
//     multiple of the filter tiles) and every step's box of it fits beside the stages (at most
//     9 steps at (128, 64): a 3 x 3 layer of up to 64 channels, a 1 x 1 of up to 576), the
//     producer loads them once, and a stage carries A alone (16 KB a step instead of 24).
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

// One block: 128 pixels x BN filters, kStages stages, one block an SM. kResident: the block
// keeps one filter tile for all its tiles, every step's B box loaded once, after the A stages
// (steps x kBStage bytes more, at launch); the stages hold A alone.
template <int BN_, int kStages_, bool kResident_ = false>
struct ICfg {
  static constexpr int BM = 128, BN = BN_, kStages = kStages_;
  static constexpr bool kResident = kResident_;
  static constexpr int kThreads = kIssuers + 256;                           // + two consumer warpgroups
  static constexpr int kAStage = BM * kRowBytes, kBStage = BN * kRowBytes;  // bytes
  static constexpr int kPipe = kStages * (kAStage + (kResident ? 0 : kBStage));
  static constexpr int kLdB = BN + 8;                // the BF16 output tile: values a row (16 bytes of padding)
  static constexpr int kOut = BM * kLdB * 2;         // the output tile, after the stages (and the filters)
  static constexpr int kSmem = kPipe + kOut + 1024;  // + the alignment slack (+ the resident filters)
  // The most steps whose filters fit beside the stages (8 KB kept for the static arrays).
  static constexpr int kMaxResident = kResident ? (227 * 1024 - 8192 - kSmem) / kBStage : 0;
  static_assert(BN == 64 || BN == 128, "wgmma shapes: m64n64k16, m64n128k16");
  static_assert(kAStage % 1024 == 0 && kBStage % 1024 == 0, "every stage starts on a swizzle period");
  static_assert(kPipe % 16 == 0, "the output tile's 16-byte reads");
  static_assert(32 % (BN / 8) == 0, "the epilogue: a warp covers whole rows of BN / 8 channel groups");
  static_assert(kSmem + 1024 + 8192 <= 228 * 1024, "one block an SM (with the static arrays)");
};

using ICfg128x128 = ICfg<128, 5>;
using ICfg128x64 = ICfg<64, 8>;
using ICfg128x64Resident = ICfg<64, 8, true>;
static_assert(ICfg128x64Resident::kMaxResident >= 9, "a 3 x 3 layer of up to 64 channels keeps its filters");

// The ping-pong form (conv_im2col_pingpong_kernel): resident (128, 64) tiles, each consumer
// warpgroup with a staging tile of its own (two), a stage fewer to make room; 4 KB kept for the
// static arrays (3.2 KB).
struct ICfgPingPong {
  static constexpr int BM = 128, BN = 64, kStages = 7;
  static constexpr bool kResident = true;
  static constexpr int kThreads = kIssuers + 256;
  static constexpr int kAStage = BM * kRowBytes, kBStage = BN * kRowBytes;
  static constexpr int kPipe = kStages * kAStage;
  static constexpr int kLdB = BN + 8;
  static constexpr int kOutOne = BM * kLdB * 2;  // one warpgroup's staging tile, bytes
  static constexpr int kSmem = kPipe + 2 * kOutOne + 1024;
  static constexpr int kMaxResident = (227 * 1024 - 4096 - kSmem) / kBStage;
};
static_assert(ICfgPingPong::kMaxResident >= 9, "a 3 x 3 layer of up to 64 channels keeps its filters");

// grid (min(tiles, SMs)), block (T::kThreads), T::kSmem bytes of dynamic shared memory (+ steps
// x kBStage with resident filters). tiles = ceil(M / 128) x tiles_n, tiles_n = ceil(K / BN);
// tile i is pixel tile i / tiles_n, filter tile i % tiles_n (resident filters: the grid a
// multiple of tiles_n, so that a block's tiles share one filter tile). map_x: x as (C, W, H, N)
// in im2col mode, 64 channels x 128 pixels a copy, 128 B swizzle; map_w: w as (C, R S, K), box
// (64, 1, BN), 128 B swizzle. vec_out: K % 8 == 0, y and residual 16-byte aligned.
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    conv_im2col_tma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                           BnParams bn, const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, int tiles_n,
                           int tiles, bool vec_out) {
#if defined(CH10_SM90A)
  constexpr int kStages = T::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages], b_bar;  // b_bar: resident filters
  __shared__ Folded sF[2][2][T::BN];  // each consumer warpgroup's, two sets by the tile's parity
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;

  const int tid = threadIdx.x, lane = tid % 32;
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar_init(smem_u32(&full_bar[st]), 1);   // thread 0's expect_tx (and the copies' bytes)
      mbar_init(smem_u32(&empty_bar[st]), 8);  // lane 0 of each consumer warp
    }
    mbar_init(smem_u32(&b_bar), 1);
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();  // the only block-wide barrier: from here on the warpgroups go their own ways

  if (tid < kIssuers) {  // the producer (implicit_gemm_wgmma.cuh): thread 0 issues every copy, the rest leave
    if (tid == 0) im2col_producer<T>(base, &map_x, &map_w, full_bar, empty_bar, &b_bar, d, tiles_n, tiles);
    return;
  }

  // --- consumers (implicit_gemm_wgmma.cuh, as v12's): no proxy fence, every byte of a stage
  // comes from the copy engine and completes through the full barrier.
  const int b_bytes = T::kResident ? d.steps * T::kBStage : 0;  // the resident filters, after the stages
  bf16* ob = reinterpret_cast<bf16*>(smem_raw + (base - smem_u32(smem_raw)) + T::kPipe + b_bytes);  // output tile
  persistent_consumers<T, kIssuers, false, T::kResident>(base, ob, full_bar, empty_bar, sF, bn, residual, y, d, tiles_n,
                                                         tiles, vec_out, tid, lane, base + uint32_t(T::kPipe), &b_bar);
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// Named barrier `id` of `threads` threads: arrive without waiting (the other side waits with
// bar.sync on the same id).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The ping-pong form (v13's `_pingpong`): the producer as v13's (resident filters, the ring of
// stages in the order of the block's tiles), but each consumer warpgroup owns WHOLE tiles, the
// block's tiles alternating between them (warpgroup cw takes the block's tiles j = cw, cw + 2,
// ...): a warpgroup multiplies all 128 rows of its tile (two m64n64k16 a slice, 64 accumulators
// a thread) while the other one runs its epilogue, so the tensor cores no longer stop for every
// tile's epilogue and the drain of its last wgmmas, as they do when both warpgroups share a tile.
//
// Tile j's steps are the ring's steps j steps .. (j + 1) steps - 1: its stage and phase follow
// from j. A stage's full barrier is waited on with the parity of its phase, which is only
// unambiguous once the stage's previous phase has completed; that phase may belong to the other
// warpgroup's tile (the one before). So the warpgroup of tile j, once it has seen every step of
// tile j in, says so (bar.arrive on barrier 3 + cw), and the warpgroup of tile j + 1 waits for
// that (bar.sync) before its first wait on a stage. The empty barriers count the 4 warps of the
// warpgroup that read the stage.
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    conv_im2col_pingpong_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                                BnParams bn, const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d,
                                int tiles_n, int tiles, bool vec_out) {
#if defined(CH10_SM90A)
  constexpr int kStages = T::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages], b_bar;
  __shared__ Folded sF[2][2][T::BN];  // each consumer warpgroup's, two sets by its tiles' parity
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;

  const int tid = threadIdx.x, lane = tid % 32;
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar_init(smem_u32(&full_bar[st]), 1);   // thread 0's expect_tx (and the copies' bytes)
      mbar_init(smem_u32(&empty_bar[st]), 4);  // lane 0 of each warp of the warpgroup that read it
    }
    mbar_init(smem_u32(&b_bar), 1);
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();

  if (tid < kIssuers) {  // the producer, v13's: thread 0 issues every copy, the rest leave
    if (tid == 0) im2col_producer<T>(base, &map_x, &map_w, full_bar, empty_bar, &b_bar, d, tiles_n, tiles);
    return;
  }

  const int cw = (tid - kIssuers) / 128, wt = tid % 128, warp = wt / 32;
  const int c8 = wt % (T::BN / 8), rr = wt / (T::BN / 8);  // the epilogue's stores
  const uint32_t b_res = base + uint32_t(T::kPipe);        // the resident filters: step t at + t kBStage
  bf16* ob = reinterpret_cast<bf16*>(smem_raw + (base - smem_u32(smem_raw)) + T::kPipe + d.steps * T::kBStage +
                                     cw * T::kOutOne);  // this warpgroup's staging tile
  const ConvShape& s = d.s;
  float acc[2][T::BN / 2];  // rows 0-63 and 64-127 of the tile
  int tile_parity = 0;
  mbar_wait(smem_u32(&b_bar), 0);  // the block's filters are in
  for (int j = cw; int(blockIdx.x) + (long long)j * gridDim.x < tiles; j += 2, tile_parity ^= 1) {
    const int tile = int(blockIdx.x + (long long)j * gridDim.x);
    const bool next = tile + (long long)gridDim.x < tiles;  // the block has a tile after this one
    const int m0 = tile / tiles_n * T::BM, k0 = tile % tiles_n * T::BN;
    const bool folds = wt < T::BN && k0 + wt < s.K;  // this thread folds channel k0 + wt
    BnChannel channel;
    if (folds) channel.load(bn, k0 + wt);
#pragma unroll
    for (int i = 0; i < T::BN / 2; ++i) acc[0][i] = 0.0f, acc[1][i] = 0.0f;
    const long long first = (long long)j * d.steps;  // the tile's first step in the ring's order
    int stage = int(first % kStages);
    uint32_t phase = uint32_t(first / kStages) & 1u;
    if (j > 0) named_barrier(3 + (1 - cw), 256);  // every step of the tile before is in
    int held = -1;                                // the stage whose wgmmas may still be reading shared memory
    for (int t = 0; t < d.steps; ++t) {
      mbar_wait(smem_u32(&full_bar[stage]), phase);  // every byte of the step's stage is in
      if (t + 1 == d.steps && next) named_barrier_arrive(3 + cw, 256);
      pin(acc[0]);
      pin(acc[1]);
      wgmma_fence();
      const uint32_t a = base + uint32_t(stage * T::kAStage), b = b_res + uint32_t(t * T::kBStage);
      consume_step<T::BN>(acc[0], a, b);
      consume_step<T::BN>(acc[1], a + uint32_t(64 * kRowBytes), b);
      wgmma_commit();
      wgmma_wait<1>();  // the step before's wgmmas are done reading their stage
      pin(acc[0]);
      pin(acc[1]);
      if (held >= 0 && lane == 0) mbar_arrive(smem_u32(&empty_bar[held]));
      held = stage;
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
    wgmma_wait<0>();
    pin(acc[0]);
    pin(acc[1]);
    if (lane == 0) mbar_arrive(smem_u32(&empty_bar[held]));

    // --- the epilogue of the tile's two halves, while the other warpgroup multiplies the next.
    Folded* f = sF[cw][tile_parity];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      persistent_epilogue<T>(acc[h], ob, f, folds, channel, bn, residual, y, d, m0, k0, vec_out, h, wt, warp, lane, c8,
                             rr, 1 + cw);
    }
    __syncwarp();  // the warp whole again before the next tile's wgmmas (.aligned)
  }
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

// x (N x H x W x C, BF16) in im2col mode: (C, W, H, N), 64 channels x `pixels` pixels a copy, the
// 128-byte swizzle, zeros outside. False where the shape is outside what the map describes.
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

// The map of the last call, so that timing a call does not time its encoding.
struct Im2colCache {
  const bf16* x = nullptr;
  ConvShape s{};
  int pixels = 0;
  bool ok = false;
  CUtensorMap map{};
};

}  // namespace

// implicit_gemm_wgmma.cuh: v13's and v14's map of x, one cache for 128-pixel copies, one for
// the others (v14's 96).
const CUtensorMap* activation_map(const bf16* x, const ConvShape& s, int P, int Q, int pixels) {
  static Im2colCache caches[2];
  Im2colCache& cache = caches[pixels == 128 ? 0 : 1];
  const ConvShape& c = cache.s;
  if (cache.x != x || cache.pixels != pixels || c.N != s.N || c.H != s.H || c.W != s.W || c.C != s.C || c.R != s.R ||
      c.S != s.S || c.stride != s.stride || c.pad != s.pad) {
    cache.ok = make_im2col_map(cache.map, x, s, P, Q, pixels);
    cache.x = x, cache.s = s, cache.pixels = pixels;
  }
  return cache.ok ? &cache.map : nullptr;
}

namespace {

template <class T, bool kPingPong = false>
void launch(const CUtensorMap& map_x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
            const Plan& p, bool vec_out, cudaStream_t stream) {
  auto* kernel = [] {
    if constexpr (kPingPong) {
      return &conv_im2col_pingpong_kernel<T>;
    } else {
      return &conv_im2col_tma_kernel<T>;
    }
  }();
  [[maybe_unused]] static const bool raised =
      wb::allow_dynamic_smem(kernel, T::kSmem + T::kMaxResident * T::kBStage);  // once per configuration
  const CUtensorMap& map_w = filter_map(w, d.s, T::BN);
  const int smem = T::kSmem + (T::kResident ? d.steps * T::kBStage : 0);
  kernel<<<p.grid, T::kThreads, smem, stream>>>(map_x, map_w, bn, residual, y, d, p.tiles_n, p.tiles, vec_out);
  WB_CHECK_LAUNCH();
}

}  // namespace

bool conv_bn_relu_im2col(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const ConvShape& s,
                         cudaStream_t stream, PersistentTile tile, Im2colSchedule schedule) {
  const Dims d = dims_of(s);
  const CUtensorMap* map_x = activation_map(x, s, d.P, d.Q);
  if (map_x == nullptr) return false;
  const bool vec_out = s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));
  const int sms = wb::sm_count();
  const Plan p64 = plan_persistent(d, 64, sms, 1.0, kTile64), p128 = plan_persistent(d, 128, sms, kStep128, kTile128);
  if (p64.tiles < 0 || p128.tiles < 0) return false;
  // Resident filters where a block's tiles share one filter tile and its steps fit: a step then
  // carries A alone. kAuto takes them wherever they apply (measured on an H200: the fastest form
  // on both layers of the six where they do, docs/ch10-conv.md), else the model's tile.
  const bool resident = p64.grid % p64.tiles_n == 0 && d.steps <= ICfg128x64Resident::kMaxResident;
  // The ping-pong form (each consumer warpgroup on whole tiles) wherever resident filters apply.
  if (schedule == Im2colSchedule::kPingPong || (schedule == Im2colSchedule::kAuto && tile == PersistentTile::kAuto)) {
    if (resident && d.steps <= ICfgPingPong::kMaxResident) {
      launch<ICfgPingPong, true>(*map_x, w, bn, residual, y, d, p64, vec_out, stream);
      return true;
    }
    if (schedule == Im2colSchedule::kPingPong) schedule = Im2colSchedule::kAuto;
  }
  if (schedule == Im2colSchedule::kResident || (schedule == Im2colSchedule::kAuto && tile == PersistentTile::kAuto)) {
    if (resident) {
      launch<ICfg128x64Resident>(*map_x, w, bn, residual, y, d, p64, vec_out, stream);
      return true;
    }
    if (schedule == Im2colSchedule::kResident) tile = PersistentTile::k128x64;
  }
  if (tile == PersistentTile::kAuto) tile = p128.cost < p64.cost ? PersistentTile::k128x128 : PersistentTile::k128x64;
  if (tile == PersistentTile::k128x128) {
    launch<ICfg128x128>(*map_x, w, bn, residual, y, d, p128, vec_out, stream);
  } else {
    launch<ICfg128x64>(*map_x, w, bn, residual, y, d, p64, vec_out, stream);
  }
  return true;
}

}  // namespace ch10::solution::hopper
