// v14 (Hopper sm_90a only) — v13's copy engine feeding the Ampere instructions: one thread of
// the block brings A by TMA in im2col mode (and the filters by TMA, resident where v13 keeps them)
// into 128-byte-swizzled stages on full / empty mbarriers, as v13 does, and the consumers are
// plain warps doing ldmatrix + mma.sync.m16n8k16 (BF16, FP32 accumulators), v6's instructions,
// with the fused epilogue applied to their registers before one store.
//
// Why (docs/ch10-conv.md, H200, batch 32): the best mma.sync steps (v6, v11) reach only
// 0.53-0.76x cuDNN's fused graph, and what holds them back is not mma.sync: a (128, 64) step of
// v6 takes 0.55 us, about half of what the tensor cores can issue, its threads spending their
// issue slots on 16-byte cp.async gathers (an address, a predicate, an L1 request each) and a
// __syncthreads a step. v13 showed where that time goes: with A by the copy engine the same
// schedule on wgmma went from 0.5-0.7 us to 0.33 us a (128, 64) step. mma.sync's peak on an H200
// is roughly 0.6x wgmma's, but cuDNN runs these layers at 175-350 TFLOPS, inside it. So v14
// keeps v13's machinery whole and changes only who multiplies:
//
//   warp 0, lane 0: the producer         for each tile, each step: wait empty[s]; expect_tx;
//   (v13's im2col_producer, shared)        one im2col copy of A (BM pixel rows, zeros in the
//                                          padding, past C and past M); one (64, 1, BN) box
//                                          of w (none when the filters are resident)
//   warps 1 .. kWarps: the consumers      for each tile, each step: wait full[s];
//   (warp tile WM x WN of the BM x BN       4 x (ldmatrix A and B fragments from the swizzled
//    block tile, kWarpsM x kWarpsN)         stage, WM / 16 x WN / 8 mma.sync), the next 16-deep
//                                          slice's fragments loaded while this one multiplies;
//                                          release the stage once its last fragments are in
//                                          registers (one arrival a warp)
//                                        epilogue: fold + residual + ReLU on the accumulators,
//                                          BF16 into the warp's own staging tile, 16-byte stores
//
// What changed from v13, and from v6 / v11:
//   * consumers: warps, not warpgroups; every warp walks its own WM x WN part of the tile with
//     v6's fragment loads (the 128-byte swizzle TMA writes is v6's: chunk c of row r at c ^ (r % 8),
//     so v6's ldmatrix addresses read a TMA stage as they read a cp.async one);
//   * no block barrier at all after the start: a stage is released by each consumer warp's
//     arrival (kWarps on the empty barrier), and each warp stages and stores its own outputs;
//   * from v6 / v11: no thread copies anything (one TMA copy a step from one thread), no
//     __syncthreads a step, persistent blocks whose producer runs ahead into the next tile while
//     the consumers store this one, and the filters resident in shared memory where a block
//     keeps one filter tile (the 56 x 56 and 1 x 1 layers).
//
// Block tiles (BM pixels: one im2col copy a step), 8 consumer warps + the producer warp:
//   (128,  64), 4 x 2 warps of 32 x 32: 8 stages of (16 + 8) KB  (resident: 7 of 16 KB + filters)
//   (128, 128), 2 x 4 warps of 64 x 32: 5 stages of (16 + 16) KB
//   ( 96, 128), 2 x 4 warps of 48 x 32: 6 stages of (12 + 16) KB: 132 tiles where the 14 x 14 and
//               stride-2 layers (M = 6,272, K = 256) make 98 of (128, 128), one an SM
//   and the first form's 4 warps (2 x 2 of 64 x 32 at (128, 64), 64 x 64 at (128, 128)), slower
//   on five of the six layers in the first run (docs/ch10-conv.md), a comparison form.
// Measured on an H200 at batch 32: 0.82-1.04x cuDNN's fused graph on ResNet-50's six layers,
// 1.31-1.78x v11 (docs/ch10-conv.md, v14).
// Shared memory (1024-byte aligned): the stages (A stages, then B stages), the resident filters,
// then each warp's BF16 staging tile (WM rows of WN + 8 values).
//
// Edges: v13's (what an im2col map describes; the launcher returns false for the rest and the
// caller runs v11). Channels past C and filters past K arrive as zeros; pixel rows past M are
// zeros, never stored; channels past K are never stored.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v14_*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v14_implicit_gemm_mma_tma,v13_implicit_gemm_im2col_tma,v11_implicit_gemm_cluster_splitk,reference
#include <cuda.h>

#include <algorithm>
#include <cstdint>

#include "device/mma.cuh"
#include "device/sm90.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "conv_common.cuh"
#include "hopper.cuh"
#include "implicit_gemm_wgmma.cuh"

namespace ch10::solution::hopper {
namespace {

using namespace wb::sm90;  // mbarriers, TMA
using wb::ptx::ldmatrix_x4;
using wb::ptx::mma_16816;
using wb::ptx::smem_u32;

// One block: 128 pixels x BN filters, kStages stages, kWarpsM x kWarpsN consumer warps after the
// producer warp, one block an SM. The members the producer reads (BM, BN, kStages, kResident,
// kAStage, kBStage, kPipe) mean what they mean in v13's ICfg.
template <int BM_, int BN_, int kWarpsM_, int kWarpsN_, int kStages_, bool kResident_ = false>
struct MCfg {
  static constexpr int BM = BM_, BN = BN_, kStages = kStages_;
  static constexpr bool kResident = kResident_;
  static constexpr int kWarpsM = kWarpsM_, kWarpsN = kWarpsN_, kWarps = kWarpsM * kWarpsN;
  static constexpr int kThreads = 32 * (1 + kWarps);                        // the producer warp + the consumers
  static constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;                // the warp tile
  static constexpr int MI = WM / 16, NI = WN / 8;                           // mma tiles of 16 x 8 a warp
  static constexpr int kAStage = BM * kRowBytes, kBStage = BN * kRowBytes;  // bytes
  static constexpr int kPipe = kStages * (kAStage + (kResident ? 0 : kBStage));
  static constexpr int kLdW = WN + 8;             // a staging row, in BF16 values (16 bytes of padding)
  static constexpr int kWarpOut = WM * kLdW * 2;  // a warp's staging tile, bytes
  static constexpr int kOut = kWarps * kWarpOut;
  static constexpr int kSmem = kPipe + kOut + 1024;  // + the alignment slack (+ the resident filters)
  // The most steps whose filters fit beside the stages (8 KB kept for the static arrays).
  static constexpr int kMaxResident = kResident ? (227 * 1024 - 8192 - kSmem) / kBStage : 0;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "A in 16-row groups, B fragments in pairs of n8 tiles");
  static_assert(32 % (WN / 8) == 0, "the stores: a warp covers whole staging rows of WN / 8 chunks");
  static_assert(kAStage % 1024 == 0 && kBStage % 1024 == 0, "every stage starts on a swizzle period");
  static_assert(kPipe % 16 == 0 && kWarpOut % 16 == 0, "the staging tiles' 16-byte reads");
  static_assert(kSmem + 8192 <= 227 * 1024, "one block an SM (with the static arrays)");
};

// 8 consumer warps (v14):
using MCfg128x64 = MCfg<128, 64, 4, 2, 8>;                // warp tiles 32 x 32
using MCfg128x128 = MCfg<128, 128, 2, 4, 5>;              // 64 x 32
using MCfg96x128 = MCfg<96, 128, 2, 4, 6>;                // 48 x 32
using MCfg128x64Resident = MCfg<128, 64, 4, 2, 7, true>;  // 32 x 32
// 4 consumer warps (the first form, `_4warps`):
using MCfg128x64W4 = MCfg<128, 64, 2, 2, 8>;                // 64 x 32
using MCfg128x128W4 = MCfg<128, 128, 2, 2, 5>;              // 64 x 64
using MCfg128x64ResidentW4 = MCfg<128, 64, 2, 2, 7, true>;  // 64 x 32
static_assert(MCfg128x64Resident::kMaxResident >= 9 && MCfg128x64ResidentW4::kMaxResident >= 9,
              "a 3 x 3 layer of up to 64 channels keeps its filters");

// A warp's fragments of one 16-deep slice kk of a stage: A (MI 16 x 16 tiles) and B (NI / 2
// pairs of 16 x 8 tiles), v6's ldmatrix addresses on the 128-byte swizzle.
template <class T>
struct Frags {
  uint32_t a[T::MI][4], b[T::NI / 2][4];
};

// grid (min(tiles, SMs)), block (T::kThreads), T::kSmem bytes of dynamic shared memory (+ steps
// x kBStage with resident filters). Tiles, maps and vec_out as v13's kernel.
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    conv_mma_tma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                        BnParams bn, const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, int tiles_n,
                        int tiles, bool vec_out) {
#if defined(CH10_SM90A)
  constexpr int kStages = T::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages], b_bar;  // b_bar: resident filters
  __shared__ Folded sF[T::kWarps][T::WN];                                         // each warp's channels of the tile
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;

  const ConvShape& s = d.s;
  const int tid = threadIdx.x, lane = tid % 32;
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) {
      mbar_init(smem_u32(&full_bar[st]), 1);           // the producer's expect_tx (and the copies' bytes)
      mbar_init(smem_u32(&empty_bar[st]), T::kWarps);  // lane 0 of each consumer warp
    }
    mbar_init(smem_u32(&b_bar), 1);
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();  // the only block-wide barrier

  if (tid < 32) {  // the producer warp: lane 0 issues every copy, the others leave
    if (tid == 0) im2col_producer<T>(base, &map_x, &map_w, full_bar, empty_bar, &b_bar, d, tiles_n, tiles);
    return;
  }

  // --- the consumer warps ------------------------------------------------------------------
  const int warp = tid / 32 - 1, wm = warp / T::kWarpsN, wn = warp % T::kWarpsN;
  // v6's fragment addresses: lane l reads row l % 16 of a 16-row group of A at chunk 2 kk + l / 16,
  // and row (l % 8) + 8 (l / 16) of a 16-row group of B at chunk 2 kk + (l / 8) % 2. Those rows
  // are l % 8 modulo 8 (every group starts on a multiple of 8), so the stored chunk is 2 kk ^ xa
  // (A) or 2 kk ^ xb (B).
  const int xa = (lane / 16) ^ (lane % 8), xb = ((lane / 8) % 2) ^ (lane % 8);
  const uint32_t a_ld = uint32_t((wm * T::WM + lane % 16) * kRowBytes);
  const uint32_t b_ld = uint32_t((wn * T::WN + lane % 8 + (lane / 16) * 8) * kRowBytes);
  const uint32_t b_res = base + uint32_t(T::kPipe);  // the resident filters: step t at + t kBStage
  auto a_stage = [&](int st) { return base + uint32_t(st * T::kAStage) + a_ld; };
  auto b_stage = [&](int st, int t) {
    if constexpr (T::kResident) {
      return b_res + uint32_t(t * T::kBStage) + b_ld;
    } else {
      return base + uint32_t(kStages * T::kAStage + st * T::kBStage) + b_ld;
    }
  };
  auto load = [&](Frags<T>& f, uint32_t a_st, uint32_t b_st, int kk) {
    const uint32_t ao = uint32_t(((2 * kk) ^ xa) << 4), bo = uint32_t(((2 * kk) ^ xb) << 4);
#pragma unroll
    for (int i = 0; i < T::MI; ++i) ldmatrix_x4(f.a[i], a_st + uint32_t(i * 16 * kRowBytes) + ao);
#pragma unroll
    for (int j = 0; j < T::NI / 2; ++j) ldmatrix_x4(f.b[j], b_st + uint32_t(j * 16 * kRowBytes) + bo);
  };
  float acc[T::MI][T::NI][4];
  auto multiply = [&](const Frags<T>& f) {
#pragma unroll
    for (int i = 0; i < T::MI; ++i) {
#pragma unroll
      for (int j = 0; j < T::NI / 2; ++j) {
        mma_16816<bf16>(acc[i][2 * j], f.a[i], f.b[j][0], f.b[j][1]);
        mma_16816<bf16>(acc[i][2 * j + 1], f.a[i], f.b[j][2], f.b[j][3]);
      }
    }
  };

  // The epilogue's places: the warp's staging tile (after the stages and the resident filters)
  // and its channels' folded parameters.
  const int b_bytes = T::kResident ? d.steps * T::kBStage : 0;
  bf16* ob = reinterpret_cast<bf16*>(smem_raw + (base - smem_u32(smem_raw)) + T::kPipe + b_bytes + warp * T::kWarpOut);
  Folded* fw = sF[warp];
  constexpr int kChPerLane = (T::WN + 31) / 32;  // the channels whose parameters a lane reads
  constexpr int kPerRow = T::WN / 8, kRowsPerPass = 32 / kPerRow;

  int stage = 0;
  uint32_t phase = 0;
  if constexpr (T::kResident) mbar_wait(smem_u32(&b_bar), 0);  // the block's filters are in
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int m0 = tile / tiles_n * T::BM + wm * T::WM;  // the warp's first pixel
    const int k0 = tile % tiles_n * T::BN + wn * T::WN;  // the warp's first filter
    // The parameters of the warp's channels, read now so that their latency passes under the
    // K loop; folded in the epilogue.
    BnChannel channel[kChPerLane];
#pragma unroll
    for (int e = 0; e < kChPerLane; ++e) {
      const int c = lane + 32 * e;
      if (c < T::WN && k0 + c < s.K) channel[e].load(bn, k0 + c);
    }
    zero_accumulators(acc);

    // The K loop: the fragments of the next 16-deep slice are loaded while this one multiplies;
    // at the last slice of a step the stage is released (its fragments are all in registers)
    // and the next step's stage waited for.
    Frags<T> f[2];
    mbar_wait(smem_u32(&full_bar[stage]), phase);
    load(f[0], a_stage(stage), b_stage(stage, 0), 0);
    for (int t = 0; t < d.steps; ++t) {
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        if (kk + 1 < kBK / 16) {
          load(f[(kk + 1) % 2], a_stage(stage), b_stage(stage, t), kk + 1);
        } else {
          __syncwarp();  // every lane's fragment loads of the stage are done
          if (lane == 0) mbar_arrive(smem_u32(&empty_bar[stage]));
          if (++stage == kStages) stage = 0, phase ^= 1;
          if (t + 1 < d.steps) {
            mbar_wait(smem_u32(&full_bar[stage]), phase);
            load(f[0], a_stage(stage), b_stage(stage, t + 1), 0);
          }
        }
        multiply(f[kk % 2]);
      }
    }

    // --- epilogue of the warp's WM x WN outputs, while the producer loads the next tile.
#pragma unroll
    for (int e = 0; e < kChPerLane; ++e) {
      const int c = lane + 32 * e;
      if (c < T::WN && k0 + c < s.K) fw[c] = channel[e].fold(bn.eps);
    }
    __syncwarp();  // the parameters are in; the tile before's staged rows all stored
    // The accumulators (rows g and g + 8 of each 16-row group, filters 8 j + 2 q and + 1) folded,
    // + residual, ReLU, rounded to BF16 (the same operations as epilogue_store8), into the
    // warp's staging tile.
    const int g = lane / 4, q2 = 2 * (lane % 4);
#pragma unroll
    for (int i = 0; i < T::MI; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = i * 16 + g + 8 * h, m = m0 + r;
        const bool m_ok = m < d.M;
#pragma unroll
        for (int j = 0; j < T::NI; ++j) {
          const int c = j * 8 + q2, k = k0 + c;
          const float2 rp = residual_pair(residual, m, m_ok, k, s.K, vec_out);
          *reinterpret_cast<__nv_bfloat162*>(ob + r * T::kLdW + c) = __floats2bfloat162_rn(
              apply_epilogue(acc[i][j][2 * h], fw[c], rp.x), apply_epilogue(acc[i][j][2 * h + 1], fw[c + 1], rp.y));
        }
      }
    }
    __syncwarp();                                     // the warp's rows are staged
    const int c8 = lane % kPerRow, kc = k0 + c8 * 8;  // the lane's 8 channels
    if (kc < s.K) {
#pragma unroll 4
      for (int r = lane / kPerRow; r < T::WM; r += kRowsPerPass) {
        const int m = m0 + r;
        if (m >= d.M) break;
        store8_out(ob + r * T::kLdW + c8 * 8, y + int64_t(m) * s.K + kc, kc, s.K, vec_out);
      }
    }
    __syncwarp();  // the staged rows are read before the next tile's epilogue writes them
  }
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// The model's costs (plan_persistent), in steps of the (128, 64) tile on 8 warps, fitted to the
// first run of v14 on an H200 (docs/ch10-conv.md): a tile's fixed share (its fill and the epilogue
// no other warp hides) is about 5.5 such steps; a (128, 128) step (twice the MACs) 1.66 of them,
// a (96, 128) step (1.5 times the MACs, 48 x 32 warp tiles) about 1.3.
constexpr double kStep128 = 1.66, kStep96 = 1.3;
constexpr double kTile64 = 5.5, kTile128 = 7.0, kTile96 = 6.0;
// The first form (4 warps) kept v13's own weights, with a (128, 128) step counted as 1.6.
constexpr double kStep128W4 = 1.6, kTile64W4 = 2.0, kTile128W4 = 3.0;

template <class T>
void launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d, const Plan& p,
            bool vec_out, cudaStream_t stream) {
  auto* kernel = &conv_mma_tma_kernel<T>;
  [[maybe_unused]] static const bool raised =
      wb::allow_dynamic_smem(kernel, T::kSmem + T::kMaxResident * T::kBStage);  // once per configuration
  const CUtensorMap& map_w = filter_map(w, d.s, T::BN);
  const int smem = T::kSmem + (T::kResident ? d.steps * T::kBStage : 0);
  const CUtensorMap& map_x = *activation_map(x, d.s, d.P, d.Q, T::BM);  // made (and checked) by the caller
  kernel<<<p.grid, T::kThreads, smem, stream>>>(map_x, map_w, bn, residual, y, d, p.tiles_n, p.tiles, vec_out);
  WB_CHECK_LAUNCH();
}

}  // namespace

bool conv_bn_relu_mma_im2col(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                             const ConvShape& s, cudaStream_t stream, MmaTile tile, int consumer_warps) {
  const Dims d = dims_of(s);
  const bool w4 = consumer_warps == 4;
  // Every tile's map must exist before any is chosen: the shape limits are the same for both
  // pixel counts, so a refusal of either sends the shape elsewhere.
  if (activation_map(x, s, d.P, d.Q, 128) == nullptr || activation_map(x, s, d.P, d.Q, 96) == nullptr) {
    return false;
  }
  const bool vec_out = s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));
  const int sms = wb::sm_count();
  const Plan p64 = plan_persistent(d, 64, sms, 1.0, w4 ? kTile64W4 : kTile64);
  const Plan p128 = plan_persistent(d, 128, sms, w4 ? kStep128W4 : kStep128, w4 ? kTile128W4 : kTile128);
  const Plan p96 = plan_persistent(d, 128, sms, kStep96, kTile96, 96);
  if (p64.tiles < 0 || p128.tiles < 0 || p96.tiles < 0) return false;
  // Resident filters where a block's tiles share one filter tile and its steps fit (v13's rule,
  // and v13's finding: the fastest form wherever it applies); else the cheapest tile.
  const bool resident = p64.grid % p64.tiles_n == 0 && d.steps <= MCfg128x64Resident::kMaxResident;
  if (tile == MmaTile::kAuto) {
    if (resident) {
      tile = MmaTile::k128x64Resident;
    } else {
      tile = p128.cost < p64.cost ? MmaTile::k128x128 : MmaTile::k128x64;
      if (!w4 && p96.cost < std::min(p64.cost, p128.cost)) tile = MmaTile::k96x128;
    }
  }
  if (tile == MmaTile::k128x64Resident && !resident) tile = MmaTile::k128x64;  // forced where it cannot apply
  switch (tile) {
    case MmaTile::k128x64Resident:
      w4 ? launch<MCfg128x64ResidentW4>(x, w, bn, residual, y, d, p64, vec_out, stream)
         : launch<MCfg128x64Resident>(x, w, bn, residual, y, d, p64, vec_out, stream);
      break;
    case MmaTile::k128x128:
      w4 ? launch<MCfg128x128W4>(x, w, bn, residual, y, d, p128, vec_out, stream)
         : launch<MCfg128x128>(x, w, bn, residual, y, d, p128, vec_out, stream);
      break;
    case MmaTile::k96x128:  // 8 warps only
      launch<MCfg96x128>(x, w, bn, residual, y, d, p96, vec_out, stream);
      break;
    default:
      w4 ? launch<MCfg128x64W4>(x, w, bn, residual, y, d, p64, vec_out, stream)
         : launch<MCfg128x64>(x, w, bn, residual, y, d, p64, vec_out, stream);
      break;
  }
  return true;
}

}  // namespace ch10::solution::hopper
