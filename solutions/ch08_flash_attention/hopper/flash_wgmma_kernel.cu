// v7 (bonus, Hopper sm_90a only) — flash attention forward on wgmma, fed by TMA, with a
// producer warpgroup and two consumer warpgroups.
//
// What changes over v4 (mma.sync), piece by piece (chapter 5's v6 introduced each tool for a
// GEMM; solutions/ch05_wmma/hopper/wgmma_tma_kernel.cu explains them in detail):
//   * wgmma instead of mma.sync: a warpgroup (4 warps) multiplies 64 query rows by a whole
//     128-key tile in ONE instruction per k-step, reading Q and K straight from shared memory
//     through descriptors. No ldmatrix at all: the tensor cores read the operands themselves.
//   * P stays in registers: the second product O += P V takes its A operand from registers
//     (the "RS" form of wgmma). The scores' accumulator layout is mma.sync's, so v4's trick
//     carries over unchanged: two 8-key accumulator chunks, packed to BF16 pairs, ARE the A
//     fragment of one 16-key step. V is read from shared memory "MN-major" (keys x D with D
//     contiguous, as stored), which wgmma transposes on the fly (imm-trans-b = 1).
//   * TMA instead of cp.async: one producer thread asks the copy engine for whole boxes of Q,
//     K and V; no consumer thread spends an instruction on loads. The tensor maps are 3-D
//     (D, S, B * H), so a box of rows stops at its head's end: rows past S arrive as zeros.
//   * warp specialisation: warpgroup 0 produces (setmaxnreg gives its registers away),
//     warpgroups 1 and 2 each own 64 of the block's 128 query rows. K and V have separate
//     "full" and "empty" mbarriers per stage, so S = Q K^T may start before V has landed,
//     and a stage is refilled as soon as every consumer warp has released it.
//   * overlap between the warpgroups: while one warpgroup runs its softmax on the CUDA cores
//     (max, exp2, sums: the MUFU unit), the other's wgmmas keep the tensor cores busy. Nothing
//     schedules this explicitly; the two simply drift out of phase.
//
// Per block (grid: ceil(Sq / 128) query tiles x B * H heads; causal: heaviest tiles first):
//
//   producer (1 thread)        Q -> q_full                        once
//                              K_t -> k_full[s]  V_t -> v_full[s]  t = 0 .. tiles - 1, 2 stages,
//                              each after k_empty[s] / v_empty[s] say the stage is free
//   consumer warpgroup c       wait q_full
//   (rows 64 c .. 64 c + 63)   per tile t:  wait k_full[s];  S = Q K_t^T   (kD / 16 wgmma, SS)
//                                           release K_t;  mask; online softmax; P -> BF16
//                                           wait v_full[s];  O += P V_t   (128 / 16 wgmma, RS)
//                                           release V_t
//                              O / l -> global, lse = m scale + log l
//
// Shared memory (1024-byte aligned: the 128-byte swizzle repeats every 8 rows of 128 bytes).
// Every tile is stored as boxes of 64 columns (128 bytes per row, the widest row the 128 B
// swizzle allows), kD / 64 of them side by side:
//   Q      128 rows x kD      kD / 64 boxes of 128 x 64     16 KB each
//   K, V   2 stages each      kD / 64 boxes of 128 x 64     16 KB each
//   kD = 128: 32 + 4 x 32 = 160 KB (one block per SM); kD = 64: 80 KB.
// Descriptors (the fields: solutions/ch05_wmma/hopper/wgmma_tma_kernel.cu):
//   Q as A, K-major     start = box (kk / 4) + warpgroup's 64 rows + (kk % 4) x 32 bytes;
//                       stride byte offset 1024 (one 8-row group to the next)
//   K as B, K-major     the same form: B(d, key) = K[key][d], D contiguous
//   V as B, MN-major    start = stage + 16 ks rows x 128 bytes; leading byte offset = one box
//                       (from D columns 0-63 to 64-127), stride byte offset 1024
//
// Edges and the mask, as v4: keys >= Sk (zeros from TMA) and, with the causal mask, keys right
// of a row's diagonal (bottom-right aligned: key j is visible to query i when j <= i + Sk - Sq)
// are set to -inf before the softmax, only in tiles that can hold one; a row that has seen no
// key keeps m = -inf and uses 0 in its place. Columns past D are zeros in Q, K and V (the box
// is 64 wide, the map D wide) and are never stored.
//
// The pieces of this kernel that v8 runs unchanged (the shared-memory layout, the producer, the
// S and P V wgmma loops, the mask's loop, the max step, O's rescale, the epilogue, the launch)
// live in flash_wgmma_common.cuh; the consumer's per-tile order of them is below.
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16 --impl=v7_flash_wgmma_tma,v4_flash_mma_sync,cudnn_sdpa
#include <cstdint>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "device/sm90.cuh"
#include "flash_wgmma_common.cuh"  // what v7 shares with v8: the producer, the consumers' steps, the epilogue
#include "hopper.cuh"

namespace ch08::solution::hopper {
namespace {

using namespace wb::sm90;  // mbarriers, TMA, wgmma fence / commit / wait, descriptors (harness/device/sm90.cuh)
using wb::ptx::smem_u32;

using flash::pack_bf16;
using flash::WgCfg;

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    flash_wgmma_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                       const __grid_constant__ CUtensorMap map_v, bf16* __restrict__ o, float* __restrict__ lse, int Sq,
                       int Sk, int D, float scale, float scale_log2, bool causal) {
#if defined(CH08_SM90A)
  constexpr int kBc = Cfg::kBc, kD = Cfg::kD, kStages = Cfg::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // q_full, then per stage: k_full, v_full, k_empty, v_empty.
  __shared__ __align__(8) uint64_t bars[1 + 4 * kStages];
  const flash::Smem<Cfg> sm{(smem_u32(smem_raw) + 1023u) & ~1023u, bars};

  flash::BlockTiles blk;
  if (!flash::start_block<Cfg>(blk, sm, &map_q, &map_k, &map_v, o, lse, Sq, Sk, D, causal)) return;
  const auto [q0, bh, row_base, tiles] = blk;

  // --- consumers: warpgroup c (1 or 2) owns rows 64 (c - 1) .. 64 (c - 1) + 63 of the block --------
  setmaxnreg_inc<240>();
  const auto [cw, warp, lane, g, qd, wg_row0, row_lo, row_hi, last_lo, last_hi] =
      flash::consumer_lane(threadIdx.x / 128, q0, Sq, Sk, causal);

  float acc_s[kBc / 2], acc_o[kD / 2];  // per thread: S (64 x kBc) and O (64 x kD) of the warpgroup
  flash::zero_acc<kBc, kD>(acc_s, acc_o);
  float m_lo = -INFINITY, m_hi = -INFINITY;  // running max of the raw scores, rows g and g + 8
  float l_lo = 0.0f, l_hi = 0.0f;            // this lane's part of the running sums

  const uint32_t q_rows = sm.sQ() + uint32_t(cw * 64 * 128);  // the warpgroup's 64 rows in each Q box
  mbar_wait(sm.q_full(), 0);
  int s = 0;
  uint32_t phase = 0;
  for (int t = 0; t < tiles; ++t) {
    const int kv0 = t * kBc;

    // --- S = Q K_t^T: 64 rows x 128 keys, kD / 16 wgmma --------------------------------------
    mbar_wait(sm.k_full(s), phase);
    wgmma_fence();  // the softmax of the last tile wrote acc_s
    flash::wgmma_qk<Cfg>(acc_s, q_rows, sm.sK(s));
    wgmma_commit();
    wgmma_wait<0>();
    pin(acc_s);
    if (lane == 0) mbar_arrive(sm.k_empty(s));  // this warp is done with K_t

    // --- mask: only the last tile and, with the causal mask, tiles crossing the warpgroup's diagonal
    const bool need_mask = kv0 + kBc > Sk || (causal && kv0 + kBc - 1 > wg_row0 + Sk - Sq);
    if (need_mask) {
      flash::mask_keys<kBc>(acc_s, kv0, qd, last_lo, last_hi);
    }

    // --- online softmax, two rows per lane (v4's, on 32 scores per row and lane) -----------------
    float base_lo = 0.0f, base_hi = 0.0f, alpha_lo = 1.0f, alpha_hi = 1.0f;  // all four set by update_max
    flash::update_max<kBc>(acc_s, scale_log2, m_lo, m_hi, l_lo, l_hi, base_lo, base_hi, alpha_lo, alpha_hi);
    flash::rescale_o<kD>(acc_o, alpha_lo, alpha_hi);
    uint32_t pf[kBc / 16][4];  // P as the A fragments of the 16-key steps of O += P V
#pragma unroll
    for (int j = 0; j < kBc / 8; ++j) {
      const float p0 = fast_exp2(fmaf(acc_s[4 * j], scale_log2, -base_lo));
      const float p1 = fast_exp2(fmaf(acc_s[4 * j + 1], scale_log2, -base_lo));
      const float p2 = fast_exp2(fmaf(acc_s[4 * j + 2], scale_log2, -base_hi));
      const float p3 = fast_exp2(fmaf(acc_s[4 * j + 3], scale_log2, -base_hi));
      l_lo += p0 + p1;
      l_hi += p2 + p3;
      // chunk j = keys 8 j .. 8 j + 7 is half (j % 2) of the 16-key step j / 2: registers 0, 1
      // (rows g, g + 8) for the first half, 2, 3 for the second.
      pf[j / 2][2 * (j % 2)] = pack_bf16(p0, p1);
      pf[j / 2][2 * (j % 2) + 1] = pack_bf16(p2, p3);
    }

    // --- O += P V_t: 64 rows x kD, 128 / 16 wgmma with P from registers -----------------------
    mbar_wait(sm.v_full(s), phase);
    wgmma_fence();  // acc_o was rescaled, pf written, by ordinary instructions
    flash::wgmma_pv_tile<Cfg>(acc_o, pf, sm.sV(s));
    wgmma_commit();
    wgmma_wait<0>();
    pin(acc_o);
    if (lane == 0) mbar_arrive(sm.v_empty(s));  // this warp is done with V_t
    if (++s == kStages) s = 0, phase ^= 1;
  }

  // --- epilogue: one division per row; BF16 pairs straight to global memory --------------------
  flash::store_o_lse<kD>(acc_o, m_lo, m_hi, l_lo, l_hi, o, lse, row_base, row_lo, row_hi, qd, Sq, D, scale);
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// The kernel of one head size.
template <class Cfg>
constexpr auto kKernel = &flash_wgmma_kernel<Cfg>;

}  // namespace

void attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                    int D, float scale, bool causal, cudaStream_t stream) {
  const int heads = B * H;
  static flash::MapCache cache;
  cache.update(q, k, v, heads, Sq, Sk, D, "v7_flash_wgmma_tma");
  if (D <= 64)
    flash::launch<WgCfg<64>, kKernel<WgCfg<64>>>(cache, o, lse, heads, Sq, Sk, D, scale, causal, stream);
  else
    flash::launch<WgCfg<128>, kKernel<WgCfg<128>>>(cache, o, lse, heads, Sq, Sk, D, scale, causal, stream);
}

}  // namespace ch08::solution::hopper
