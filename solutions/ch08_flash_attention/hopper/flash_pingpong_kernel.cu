// v8 (bonus, Hopper sm_90a only) — v7 with FlashAttention-3's two scheduling steps: the two
// consumer warpgroups take turns on the tensor cores (ping-pong), and each warpgroup overlaps
// its softmax with its own last P V product (the overlap inside a warpgroup).
//
// What changes over v7 (hopper/flash_wgmma_kernel.cu; the producer, the shared-memory layout,
// the S and P V wgmma loops, the mask, the max step, O's rescale and the epilogue are v7's,
// from flash_wgmma_common.cuh):
//   * ping-pong between the consumer warpgroups. In v7 the two warpgroups drift: nothing stops
//     both from issuing their wgmma at the same moment and then both running their softmax
//     while the tensor cores idle. Here two named barriers (bar.sync / bar.arrive on ids 1 and
//     2, 256 threads: both consumer warpgroups) hand a token back and forth. A warpgroup issues
//     its wgmma only while it holds the token and passes it on as soon as they are issued, so
//     the other warpgroup's products run on the tensor cores while this one does its softmax.
//   * the overlap inside a warpgroup. v7 waits for S_t, runs the softmax, issues O += P_t V_t
//     and waits for it before touching S_{t+1}: the warpgroup's own tensor-core work and its
//     softmax never run at the same time. Here one turn issues S_t = Q K_t^T and then
//     O += P_{t-1} V_{t-1} (two commit groups); wgmma.wait_group 1 returns when S_t is done,
//     and the softmax of tile t runs while P_{t-1} V_{t-1} is still on the tensor cores. Only
//     after wait_group 0 are O rescaled and P_t packed into the registers P_{t-1} V_{t-1} read.
//     This order needs ONE S accumulator (S_t is issued after P_{t-1} left acc_s for pf): per
//     thread at D 128, O 64 + S 64 + P 32 registers. FlashAttention-3 states the same
//     pipeline as "issue S_{t+1} before the softmax of t", which needs a second S accumulator.
//     ptxas -v (sm_90a, both head sizes): 168 registers at launch (setmaxnreg then gives the
//     consumers 240), 0 bytes spill stores, 0 bytes spill loads.
//
// The token, per warpgroup c (0 or 1): a turn is
//   bar.sync   turn[c]        wait for the token (the other warpgroup's bar.arrive on turn[c])
//   issue the turn's wgmma    S_0 alone; then S_t with P_{t-1} V_{t-1}, t = 1 .. tiles - 1;
//                             then the last P V alone: tiles + 1 turns per warpgroup
//   bar.arrive turn[1 - c]    hand it over
// At the start warpgroup 1 arrives once on turn[0], so warpgroup 0 goes first. Both run the
// same number of tiles (the block's, not the warpgroup's: the mask is applied inside a tile,
// so a causal block's warpgroup whose rows see fewer tiles still takes every turn), so
// warpgroup 0 syncs tiles + 1 times on turn[0] and receives 1 + tiles arrivals (warpgroup 1
// skips the hand-over of its last turn, which nobody would take); warpgroup 1 syncs tiles + 1
// times on turn[1] and receives tiles + 1. No barrier is left half-arrived when the block
// exits. A block whose rows see no key returns before either warpgroup touches a barrier. The
// mbarrier waits (K_t, V_{t-1} landed) come before bar.sync, so no warpgroup holds the token
// while it waits for a copy. kOverlap = false keeps the ping-pong alone (one turn per tile:
// S_t; P V outside the turns), for measuring each step.
//
// Measured, NVIDIA H200, B 4, H 16, S 8192, against cuDNN in the same run (ch08_bench --full):
// D 128: 0.96x (v7 0.87x), causal 0.97x (v7 0.88x); D 64: 0.90x and 0.91x (v7 0.91x, 0.91x).
// The ping-pong alone (kOverlap = false) was slower than v7 everywhere (0.85-0.87x); the
// overlap alone (no turns) measured 0.97x / 0.95x at D 128, within the run-to-run spread
// (2-4 %) of both together. At D 64 neither step helps (not yet profiled; a likely cause: the
// P V product there is half as long, too short to hide a softmax of the same length).
//
// Source of the ideas (our own code): J. Shah, G. Bikshandi, Y. Zhang, V. Thakkar, P. Ramani
// and T. Dao, "FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision"
// (2024), section 3.1 (ping-pong scheduling) and 3.2 (intra-warpgroup pipelining).
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16 --full --shape=B4_H16_Sq8192
//      --impl=v7_flash_wgmma_tma,v8_flash_wgmma_pingpong,cudnn_sdpa
#include <cstdint>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "device/sm90.cuh"
#include "flash_wgmma_common.cuh"
#include "hopper.cuh"

namespace ch08::solution::hopper {
namespace {

using namespace wb::sm90;  // mbarriers, TMA, wgmma fence / commit / wait, descriptors (harness/device/sm90.cuh)
using flash::pack_bf16;
using flash::WgCfg;
using wb::ptx::smem_u32;

// The token's named barriers turn[0], turn[1] are ids kBar and kBar + 1 (0 is __syncthreads),
// each for kThreads = 256 threads: both consumer warpgroups. (Templates: the host pass, which
// never sees the kernel's body, does not warn about unused functions.)
//
// Waits for the token (every thread of the warpgroup).
template <int kBar = 1, int kThreads = 256>
__device__ __forceinline__ void turn_wait(int cw) {
  named_barrier(kBar + cw, kThreads);
}
// Hands the token to the other warpgroup without waiting.
template <int kBar = 1, int kThreads = 256>
__device__ __forceinline__ void turn_pass(int cw) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(kBar + (1 - cw)), "n"(kThreads) : "memory");
}

// The P fragments' counterpart of sm90.cuh's pin: their registers stay allocated (the compiler
// may not reuse them) up to this point, however long ago their last use in C++ was.
template <int N>
__device__ __forceinline__ void pin_frag(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

// kOverlap: false = the ping-pong alone (step 1), true = with the overlap inside a warpgroup.
template <class Cfg, bool kOverlap>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    flash_pingpong_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                          const __grid_constant__ CUtensorMap map_v, bf16* __restrict__ o, float* __restrict__ lse,
                          int Sq, int Sk, int D, float scale, float scale_log2, bool causal) {
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
  uint32_t pf[kBc / 16][4];             // P as the A fragments of the 16-key steps of O += P V
  flash::zero_acc<kBc, kD>(acc_s, acc_o);
  float m_lo = -INFINITY, m_hi = -INFINITY;  // running max of the raw scores, rows g and g + 8
  float l_lo = 0.0f, l_hi = 0.0f;            // this lane's part of the running sums
  float alpha_lo = 1.0f, alpha_hi = 1.0f;    // the last tile's rescale of O, applied once O is ours again
  const uint32_t q_rows = sm.sQ() + uint32_t(cw * 64 * 128);  // the warpgroup's 64 rows in each Q box

  // S = Q K^T of the tile in stage st: 64 rows x 128 keys, kD / 16 wgmma (not committed).
  auto issue_s = [&](int st) { flash::wgmma_qk<Cfg>(acc_s, q_rows, sm.sK(st)); };
  // O += P V of the tile in stage st: 64 rows x kD, 128 / 16 wgmma, P from registers (not committed).
  auto issue_pv = [&](int st) { flash::wgmma_pv_tile<Cfg>(acc_o, pf, sm.sV(st)); };
  // The mask and the online softmax of tile t (v7's), in place: acc_s becomes the unnormalised
  // probabilities, l and m are updated, and alpha says how much O must shrink. O itself and pf
  // are not touched: with the overlap, the last tile's O += P V may still be reading them.
  auto softmax = [&](int t) {
    const int kv0 = t * kBc;
    // only the last tile and, with the causal mask, tiles crossing the warpgroup's diagonal
    const bool need_mask = kv0 + kBc > Sk || (causal && kv0 + kBc - 1 > wg_row0 + Sk - Sq);
    if (need_mask) {
      flash::mask_keys<kBc>(acc_s, kv0, qd, last_lo, last_hi);
    }
    float base_lo, base_hi;  // set by update_max, with alpha
    flash::update_max<kBc>(acc_s, scale_log2, m_lo, m_hi, l_lo, l_hi, base_lo, base_hi, alpha_lo, alpha_hi);
#pragma unroll
    for (int j = 0; j < kBc / 8; ++j) {
      acc_s[4 * j] = fast_exp2(fmaf(acc_s[4 * j], scale_log2, -base_lo));
      acc_s[4 * j + 1] = fast_exp2(fmaf(acc_s[4 * j + 1], scale_log2, -base_lo));
      acc_s[4 * j + 2] = fast_exp2(fmaf(acc_s[4 * j + 2], scale_log2, -base_hi));
      acc_s[4 * j + 3] = fast_exp2(fmaf(acc_s[4 * j + 3], scale_log2, -base_hi));
      l_lo += acc_s[4 * j] + acc_s[4 * j + 1];
      l_hi += acc_s[4 * j + 2] + acc_s[4 * j + 3];
    }
  };
  // Once no wgmma reads O or P any more: O *= alpha, and P -> BF16 pairs. Chunk j = keys
  // 8 j .. 8 j + 7 is half (j % 2) of the 16-key step j / 2: registers 0, 1 (rows g, g + 8) for
  // the first half, 2, 3 for the second.
  auto rescale_and_pack = [&]() {
    flash::rescale_o<kD>(acc_o, alpha_lo, alpha_hi);
#pragma unroll
    for (int j = 0; j < kBc / 8; ++j) {
      pf[j / 2][2 * (j % 2)] = pack_bf16(acc_s[4 * j], acc_s[4 * j + 1]);
      pf[j / 2][2 * (j % 2) + 1] = pack_bf16(acc_s[4 * j + 2], acc_s[4 * j + 3]);
    }
  };

  if (cw == 1) turn_pass(cw);  // warpgroup 0 takes the first turn
  mbar_wait(sm.q_full(), 0);

  if constexpr (!kOverlap) {
    // --- ping-pong alone: a turn is one tile's S = Q K^T; `tiles` turns per warpgroup ------------
    int s = 0;
    uint32_t phase = 0;
    for (int t = 0; t < tiles; ++t) {
      mbar_wait(sm.k_full(s), phase);
      turn_wait(cw);
      wgmma_fence();  // the softmax of the last tile wrote acc_s
      issue_s(s);
      wgmma_commit();
      if (cw == 0 || t + 1 < tiles) turn_pass(cw);  // warpgroup 1's last hand-over has no taker
      wgmma_wait<0>();
      pin(acc_s);
      if (lane == 0) mbar_arrive(sm.k_empty(s));  // this warp is done with K_t
      softmax(t);
      rescale_and_pack();
      mbar_wait(sm.v_full(s), phase);
      wgmma_fence();  // acc_o was rescaled, pf written, by ordinary instructions
      issue_pv(s);
      wgmma_commit();
      wgmma_wait<0>();
      pin(acc_o);
      if (lane == 0) mbar_arrive(sm.v_empty(s));  // this warp is done with V_t
      if (++s == kStages) s = 0, phase ^= 1;
    }
  } else {
    // --- ping-pong and the overlap: a turn issues S_t and O += P_{t-1} V_{t-1} together; the
    // softmax of tile t then runs while P_{t-1} V_{t-1} is still on the tensor cores.
    // tiles + 1 turns per warpgroup: S_0 alone, t = 1 .. tiles - 1, the last P V alone.
    int sk = 0, sv = 0;  // the stages of K_t and of V_{t-1}
    uint32_t pk = 0, pv = 0;
    mbar_wait(sm.k_full(sk), pk);
    turn_wait(cw);
    wgmma_fence();
    issue_s(sk);
    wgmma_commit();
    turn_pass(cw);
    wgmma_wait<0>();
    pin(acc_s);
    if (lane == 0) mbar_arrive(sm.k_empty(sk));
    softmax(0);
    rescale_and_pack();  // O is 0 and alpha 0 here: harmless, and P of tile 0 is packed
    for (int t = 1; t < tiles; ++t) {
      if (++sk == kStages) sk = 0, pk ^= 1;
      mbar_wait(sm.k_full(sk), pk);  // both waits before the turn: never hold the token while waiting on TMA
      mbar_wait(sm.v_full(sv), pv);
      turn_wait(cw);
      wgmma_fence();  // acc_s, acc_o and pf were written by ordinary instructions
      issue_s(sk);
      wgmma_commit();
      issue_pv(sv);
      wgmma_commit();
      turn_pass(cw);
      wgmma_wait<1>();  // S_t is done (groups complete in order); P_{t-1} V_{t-1} may still run
      pin(acc_s);
      if (lane == 0) mbar_arrive(sm.k_empty(sk));
      softmax(t);  // reads and writes acc_s, m, l only
      wgmma_wait<0>();
      pin(acc_o);
      pin_frag(pf);  // keeps pf's registers allocated until the wgmma that read them is done
      if (lane == 0) mbar_arrive(sm.v_empty(sv));
      if (++sv == kStages) sv = 0, pv ^= 1;
      rescale_and_pack();
    }
    mbar_wait(sm.v_full(sv), pv);
    turn_wait(cw);
    wgmma_fence();
    issue_pv(sv);
    wgmma_commit();
    if (cw == 0) turn_pass(cw);  // warpgroup 1's last hand-over has no taker
    wgmma_wait<0>();
    pin(acc_o);
    pin_frag(pf);
    if (lane == 0) mbar_arrive(sm.v_empty(sv));
  }

  // --- epilogue: one division per row; BF16 pairs straight to global memory --------------------
  flash::store_o_lse<kD>(acc_o, m_lo, m_hi, l_lo, l_hi, o, lse, row_base, row_lo, row_hi, qd, Sq, D, scale);
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// The kernel of one head size (kOverlap = false: the ping-pong alone, for measuring each step).
template <class Cfg, bool kOverlap = true>
constexpr auto kKernel = &flash_pingpong_kernel<Cfg, kOverlap>;

}  // namespace

void attention_pingpong_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq,
                             int Sk, int D, float scale, bool causal, cudaStream_t stream) {
  const int heads = B * H;
  static flash::MapCache cache;
  cache.update(q, k, v, heads, Sq, Sk, D, "v8_flash_wgmma_pingpong");
  if (D <= 64)
    flash::launch<WgCfg<64>, kKernel<WgCfg<64>>>(cache, o, lse, heads, Sq, Sk, D, scale, causal, stream);
  else
    flash::launch<WgCfg<128>, kKernel<WgCfg<128>>>(cache, o, lse, heads, Sq, Sk, D, scale, causal, stream);
}

}  // namespace ch08::solution::hopper
