// v4 — flash attention in BF16 on tensor cores: the FlashAttention-2 forward structure with
// mma.sync.m16n8k16 (FP32 accumulation), cp.async and ldmatrix.
//
// What changes over v3: both products run on tensor cores, and their operands live in
// registers. The work split is FlashAttention-2's: a block owns Br = 16 x kWarps query rows,
// each warp 16 of them (one m16 tile), and the warps never exchange anything: each keeps
// its rows' running max, sum and output to itself. Per block:
//
//   prologue   cp.async Q (Br x D) and K_0 (Bc x D)  | commit        group A
//              cp.async V_0                           | commit        group B
//              wait for A; barrier; ldmatrix Q -> registers (kD / 16 A fragments per warp)
//   tile t     wait for K_t; barrier                   (K_t visible to all; tile t-1 done)
//              cp.async K_{t+1} into the other K stage | commit
//              S = Q K_t^T              (16 x Bc per warp, kBc / 8 accumulator tiles)
//              mask (diagonal and last tiles only), online softmax on the accumulators
//              P -> BF16 A fragments    (no shared memory: see "P from registers" below)
//              wait for V_t; barrier
//              cp.async V_{t+1} into the other V stage | commit
//              O += P V_t               (16 x D per warp, kD / 8 accumulator tiles)
//   epilogue   l summed over the quad; O / l into shared memory (where Q was); 16-byte stores;
//              lse = m * scale + log(l)
//
// The two waits keep one load in flight at all times: K_{t+1} streams in while S, the softmax
// and P V_t run, V_{t+1} while P V_t and S_{t+1} run. The barriers also order the stages:
// when a warp passes the first barrier of tile t, every warp has finished tile t - 1, so
// tile t - 1's K and V stages may be overwritten with tile t + 1.
//
// Lane maps (lane l of a warp, g = l / 4, c = l % 4; mma.sync.m16n8k16.row.col, BF16 in,
// FP32 accumulate; ldmatrix as in solutions/ch05_wmma/mma_common.cuh):
//   A (16 x 16)  a0 = (row g, k 2c, 2c+1)   a1 = (row g+8, k 2c..)   a2 = (row g, k 2c+8..)
//                a3 = (row g+8, k 2c+8..)   (two BF16 per register, the lower k in the low half)
//   B (16 x 8)   b0 = (k 2c, 2c+1; col g)   b1 = (k 2c+8, 2c+9; col g)
//   C (16 x 8)   c0, c1 = (row g, cols 2c, 2c+1)   c2, c3 = (row g+8, cols 2c, 2c+1)
//
//   Q (A of S = Q K^T): ldmatrix.x4 on rows warp*16 + (l % 16), columns 16 kk + 8 (l / 16) of
//     the Q tile gives a0..a3 of k-step kk (the four 8 x 8 quarters in A's register order).
//   K (B of S): B(k = d, n = key) = K[key][d], so B's columns are K's rows: K as stored (key
//     by key, d contiguous) IS the "col" layout, and ldmatrix WITHOUT .trans delivers it. One
//     x4 covers 16 keys x 16 d: lanes 0-7 address keys 0-7 at d + 0 (b0 of keys 0-7), lanes
//     8-15 keys 0-7 at d + 8 (b1), lanes 16-23 keys 8-15 at d + 0, lanes 24-31 keys 8-15 at
//     d + 8: key row (l % 8) + 8 (l / 16), column 8 ((l / 8) % 2).
//   V (B of O = P V): B(k = key, n = d) = V[key][d] is row-major in k, so ldmatrix.trans: key
//     row 16 t + (l % 16), column 16 dp + 8 (l / 16) gives b0, b1 of d-tile 2 dp and of 2 dp + 1.
//   P from registers (A of O = P V): S's accumulator tiles j = 2t and 2t + 1 hold, for lane
//     (g, c), row g keys 16t + 2c, +1 (c0, c1 of tile 2t) and keys 16t + 8 + 2c, +1 (c0, c1
//     of tile 2t + 1), and the same for row g + 8 in c2, c3: exactly a0..a3 of k-step t.
//     Packing each pair into a BF16x2 (lower key in the low half) IS the A fragment; no
//     shuffle, no shared memory.
//   Row statistics: a row's Bc scores are spread over the 4 lanes of a quad (lanes 4g .. 4g+3),
//     2 per accumulator tile: the row max is 2 __shfl_xor_sync (1, 2) after a lane-local max.
//     The running sum l is kept per lane (its own columns) and summed over the quad once, at
//     the end: the rescaling by alpha is the same for the 4 lanes, so the parts stay consistent.
//
// The softmax in base 2: exp(scale (s - m)) = exp2(s * scale log2 e - m * scale log2 e), one
// FFMA and one MUFU.EX2 per score (FlashAttention does the same). m is the running max of the
// raw scores; a row with nothing visible yet keeps m = -inf and uses 0 in its place, so that
// -inf - -inf never happens (alpha = exp2(-inf) = 0, p = exp2(-inf) = 0).
//
// Masking costs a compare and a select per score, so only tiles that need it pay: the last,
// partial tile (keys >= Sk) and, with the causal mask, tiles that cross the diagonal of the
// block's first row (j > q0 + Sk - Sq for some key). Tiles right of the block's last visible
// key are never loaded (key_tiles), and with the mask the blocks with the most tiles start
// first.
//
// Shared memory: the Q tile, and two stages each of the K and V tiles, rows padded by 16
// bytes (pitch kD + 8 BF16): the 8 rows one ldmatrix phase reads then start in 8 different
// 16-byte bank groups for every kD of the four (chapter 5 used an XOR swizzle instead; the
// padding works for kD = 96 too, whose 12 pieces per row a 3-bit XOR does not fit). 87 KB at
// kD = 128, 4 warps, Bc = 64: two blocks per SM on an H100 (228 KB), one on an A100 (164 KB).
// Edges: cp.async fills zeros past Sq, Sk and D (its source size 0), so a partial tile
// computes on zeros, and the mask removes keys past Sk before the softmax.
//
// Tuning: (kWarps, kBc) per head size are template parameters (Tile below); 4 warps and 64
// keys everywhere is a starting point, not a measured optimum.
//
// Part 2 of the chapter runs the same kernel on two more layouts (the Heads struct below
// says which); only where a block's rows and keys are changes, never the loop:
//   * grouped heads (GQA / MQA, attention_gqa/bf16): the G = Hq / Hkv query heads of one kv
//     head are neighbours in q, so their rows form ONE matrix of G * Sq rows (row r = g Sq + i,
//     contiguous in q, o and lse) against one K and one V. A block takes 64 of those rows:
//     K and V are read once per block for all the heads in it (at Sq = 1, every head of the
//     group in one block), never copied per query head. The causal mask needs the row's
//     position in its own head, i = r % Sq; a block whose rows cross from one head into the
//     next visits the tiles its highest i needs and masks from its lowest (0).
//   * ragged batches (attention_ragged/bf16): a block takes rows of ONE head of ONE sequence,
//     tokens cu_seqlens[b] .. cu_seqlens[b + 1] - 1, token-major: a row of q is Hq * D
//     elements after the previous one (of k and v, Hkv * D). The grid covers the longest
//     sequence; a block past the end of its sequence returns at once, so no padding is
//     computed, and a tile never loads a row at or past the sequence's end (the zeros of
//     load_tile), so a block never reads the next sequence.
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16 --impl=v4_flash_mma_sync,cudnn_sdpa,cublas_unfused
#include <cstdint>

#include "../ch05_wmma/async_copy.cuh"
#include "../ch05_wmma/mma_common.cuh"
#include "attention_common.cuh"
#include "cuda/errors.cuh"
#include "ladder.cuh"

namespace ch08::solution {
namespace {

using ch05::solution::cp_async_16;
using ch05::solution::cp_async_commit;
using ch05::solution::cp_async_wait;
using ch05::solution::ldmatrix_x4;
using ch05::solution::ldmatrix_x4_trans;
using ch05::solution::mma_16816;
using ch05::solution::smem_u32;

// A tile configuration: head size kD (the padded one), kWarps warps of 16 query rows, kBc
// keys per tile.
template <int kD_, int kWarps_, int kBc_>
struct Tile {
  static constexpr int kD = kD_, kWarps = kWarps_, kBc = kBc_;
  static constexpr int kBr = 16 * kWarps;       // query rows per block: one m16 tile per warp
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kPitch = kD + 8;         // shared-memory row pitch in BF16 (16 bytes of padding)
  static constexpr int kQElems = kBr * kPitch;  // the Q tile (later the O tile)
  static constexpr int kKVElems = kBc * kPitch; // one stage of K or of V
  static constexpr int kSmemBytes = (kQElems + 4 * kKVElems) * static_cast<int>(sizeof(bf16));
  static constexpr int kKSteps = kD / 16;       // k-steps of S = Q K^T
  static constexpr int kSTiles = kBc / 8;       // 16 x 8 accumulator tiles of S per warp
  static constexpr int kPSteps = kBc / 16;      // k-steps of O = P V
  static constexpr int kOTiles = kD / 8;        // 16 x 8 accumulator tiles of O per warp
  static_assert(kD % 16 == 0 && kD <= 256, "head size: whole k16 steps of Q K^T and d16 pairs of P V");
  static_assert(kBc % 16 == 0, "keys per tile: whole k16 steps of P V (and one ldmatrix.x4 of K covers 16 keys)");
  static_assert((kBr * kD / 8) % kThreads == 0 && (kBc * kD / 8) % kThreads == 0,
                "tiles of whole 16-byte pieces, the same number for every thread");
  static_assert((kPitch * sizeof(bf16)) % 16 == 0, "rows start 16-byte aligned (cp.async, ldmatrix)");
};

// Rows row0 .. row0 + kRows - 1 of a (rows_total x D) BF16 matrix whose rows are `ld`
// elements apart into a (kRows, kPitch) tile, 16 bytes per cp.async; zeros for rows >=
// rows_total and columns >= D.
template <class Cfg, int kRows>
__device__ __forceinline__ void load_tile(bf16* dst, const bf16* src, int row0, int rows_total, int D, size_t ld) {
  constexpr int kPerRow = Cfg::kD / 8, kPieces = kRows * kPerRow;
#pragma unroll
  for (int n = 0; n < kPieces / Cfg::kThreads; ++n) {
    const int c = threadIdx.x + n * Cfg::kThreads, r = c / kPerRow, p = c % kPerRow;
    const bool in = row0 + r < rows_total && p * 8 < D;
    cp_async_16(dst + r * Cfg::kPitch + p * 8, in ? src + static_cast<size_t>(row0 + r) * ld + p * 8 : src, in);
  }
}

// Which rows and keys the blocks of one launch own (see the header comment).
struct Heads {
  int Sq, Sk;             // dense: queries and keys per head (ragged: from cu_seqlens)
  int group;              // G = Hq / Hkv query heads per kv head (1: ordinary attention)
  int Hq, Hkv, T;         // ragged: heads per token and tokens in all (row strides of q, k, lse)
  const int* cu_seqlens;  // null: dense (B, H, S, D) heads; else the ragged, token-major layout
};

// One block's view: rows 0 .. R - 1 (query i of a row is r % Sq), its keys 0 .. Sk - 1, and
// where they are.
struct BlockRows {
  int R, Sq, Sk;
  size_t ldq, ldk;  // elements from one row of q (o) / k (v) to the next
  const bf16 *q, *k, *v;
  bf16* o;
  float* lse;       // row r's lse at lse[r]
};

__device__ __forceinline__ BlockRows block_rows(const Heads& hd, const bf16* q, const bf16* k, const bf16* v, bf16* o,
                                                float* lse, int D) {
  BlockRows br;
  if (hd.cu_seqlens == nullptr) {  // blockIdx.y = b * Hkv + hkv: the G heads of the group, head after head
    const size_t bkv = blockIdx.y;
    br.Sq = hd.Sq;
    br.Sk = hd.Sk;
    br.R = hd.group * hd.Sq;
    br.ldq = D;
    br.ldk = D;
    br.q = q + bkv * br.R * D;
    br.o = o + bkv * br.R * D;
    br.lse = lse + bkv * br.R;
    br.k = k + bkv * br.Sk * D;
    br.v = v + bkv * br.Sk * D;
  } else {  // blockIdx.y = b * Hq + hq: one head of one sequence
    const int b = blockIdx.y / hd.Hq, hq = blockIdx.y % hd.Hq, hkv = hq / hd.group;
    const int start = hd.cu_seqlens[b];
    br.R = br.Sq = br.Sk = hd.cu_seqlens[b + 1] - start;
    br.ldq = static_cast<size_t>(hd.Hq) * D;
    br.ldk = static_cast<size_t>(hd.Hkv) * D;
    br.q = q + start * br.ldq + static_cast<size_t>(hq) * D;
    br.o = o + start * br.ldq + static_cast<size_t>(hq) * D;
    br.k = k + start * br.ldk + static_cast<size_t>(hkv) * D;
    br.v = v + start * br.ldk + static_cast<size_t>(hkv) * D;
    br.lse = lse + static_cast<size_t>(hq) * hd.T + start;
  }
  return br;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x (lo) in the low 16 bits
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Two blocks per SM, what an H100's shared memory allows at kD = 128 (the register budget that
// follows, 256 per thread, is no limit: ptxas uses about 220 at kD = 128 and spills nothing).
// Without the minimum, ptxas capped kD = 64 and 96 near 128 registers on sm_90a and spilled.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 2)
    flash_mma_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                     bf16* __restrict__ o, float* __restrict__ lse, Heads heads, int D, float scale,
                     float scale_log2, bool causal) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kBr = Cfg::kBr, kBc = Cfg::kBc, kP = Cfg::kPitch, kD = Cfg::kD;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // (kBr, kP): Q, then O
  bf16* sK = sQ + Cfg::kQElems;                   // 2 x (kBc, kP)
  bf16* sV = sK + 2 * Cfg::kKVElems;              // 2 x (kBc, kP)

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, qd = lane % 4;
  const int q_tile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // most key tiles first
  const int q0 = q_tile * kBr;
  const BlockRows br = block_rows(heads, q, k, v, o, lse, D);
  const int R = br.R, Sq = br.Sq, Sk = br.Sk;
  if (q0 >= R) return;  // a ragged batch: past the end of this (shorter) sequence
  const bf16* qh = br.q;
  const bf16* kh = br.k;
  const bf16* vh = br.v;
  bf16* oh = br.o;
  float* lh = br.lse;
  const int row_lo = q0 + warp * 16 + g, row_hi = row_lo + 8;  // this lane's two rows

  // The queries (positions i = r % Sq in their heads) of the block's rows q0 .. q_end - 1: a
  // block that crosses from one head into the next holds i = Sq - 1 and i = 0.
  const int q_end = min(q0 + kBr, R);
  const bool one_head = q0 / Sq == (q_end - 1) / Sq;
  const int i_min = one_head ? q0 % Sq : 0, i_max = one_head ? (q_end - 1) % Sq : Sq - 1;

  const int tiles = key_tiles(i_max, 1, Sq, Sk, kBc, causal);
  if (tiles == 0) {  // the mask with Sq > Sk: no row of this block sees a key
    for (int e = threadIdx.x; e < kBr * D; e += Cfg::kThreads) {
      const int r = e / D;
      if (q0 + r < R) oh[static_cast<size_t>(q0 + r) * br.ldq + e % D] = __float2bfloat16_rn(0.0f);
    }
    for (int r = threadIdx.x; r < kBr; r += Cfg::kThreads) {
      if (q0 + r < R) lh[q0 + r] = -INFINITY;
    }
    return;
  }

  // --- prologue: Q and the first K and V tiles; Q's fragments into registers -----------------
  load_tile<Cfg, kBr>(sQ, qh, q0, R, D, br.ldq);
  load_tile<Cfg, kBc>(sK, kh, 0, Sk, D, br.ldk);
  cp_async_commit();  // group A: Q, K_0
  load_tile<Cfg, kBc>(sV, vh, 0, Sk, D, br.ldk);
  cp_async_commit();  // group B: V_0
  cp_async_wait<1>();  // A has landed (this thread's copies) ...
  __syncthreads();     // ... and every thread's

  uint32_t qf[Cfg::kKSteps][4];  // A fragments of the warp's 16 rows, k-step kk = d 16 kk .. 16 kk + 15
#pragma unroll
  for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
    ldmatrix_x4(qf[kk], smem_u32(sQ + (warp * 16 + (lane % 16)) * kP + kk * 16 + (lane / 16) * 8));
  }

  float acc_o[Cfg::kOTiles][4];
#pragma unroll
  for (int j = 0; j < Cfg::kOTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[j][e] = 0.0f;
  float m_lo = -INFINITY, m_hi = -INFINITY;  // running max of the raw scores, rows g and g + 8
  float l_lo = 0.0f, l_hi = 0.0f;            // this lane's part of the running sums

  // The last key each of this lane's rows may see (by its query's position in its own head).
  const int last_lo = causal ? min(row_lo % Sq + Sk - Sq, Sk - 1) : Sk - 1;
  const int last_hi = causal ? min(row_hi % Sq + Sk - Sq, Sk - 1) : Sk - 1;

  for (int t = 0; t < tiles; ++t) {
    const int stage = t % 2, kv0 = t * kBc;
    const bf16* sKt = sK + stage * Cfg::kKVElems;
    const bf16* sVt = sV + stage * Cfg::kKVElems;
    if (t > 0) {
      cp_async_wait<1>();  // K_t has landed (V_t may still be on its way)
      __syncthreads();     // for every thread; and every warp has finished tile t - 1
    }
    // K_{t+1} into the other stage, which held K_{t-1} (read by every warp before the barrier).
    if (t + 1 < tiles) load_tile<Cfg, kBc>(sK + (1 - stage) * Cfg::kKVElems, kh, kv0 + kBc, Sk, D, br.ldk);
    cp_async_commit();  // (an empty group past the last tile keeps the count of groups the same)

    // --- S = Q K_t^T: 16 rows x kBc keys per warp ---------------------------------------------
    float acc_s[Cfg::kSTiles][4];
#pragma unroll
    for (int j = 0; j < Cfg::kSTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_s[j][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
#pragma unroll
      for (int jp = 0; jp < kBc / 16; ++jp) {  // keys 16 jp .. 16 jp + 15: accumulator tiles 2 jp, 2 jp + 1
        uint32_t kb[4];
        const int key = jp * 16 + (lane % 8) + (lane / 16) * 8, col = kk * 16 + ((lane / 8) % 2) * 8;
        ldmatrix_x4(kb, smem_u32(sKt + key * kP + col));
        mma_16816<bf16>(acc_s[2 * jp], qf[kk], kb[0], kb[1]);
        mma_16816<bf16>(acc_s[2 * jp + 1], qf[kk], kb[2], kb[3]);
      }
    }

    // --- mask: only the last tile and, with the causal mask, tiles crossing the diagonal ---------
    const bool need_mask = kv0 + kBc > Sk || (causal && kv0 + kBc - 1 > i_min + Sk - Sq);
    if (need_mask) {
#pragma unroll
      for (int j = 0; j < Cfg::kSTiles; ++j) {
        const int key = kv0 + j * 8 + 2 * qd;  // accumulator elements e = 0, 1 (row g), 2, 3 (row g + 8)
        if (key > last_lo) acc_s[j][0] = -INFINITY;
        if (key + 1 > last_lo) acc_s[j][1] = -INFINITY;
        if (key > last_hi) acc_s[j][2] = -INFINITY;
        if (key + 1 > last_hi) acc_s[j][3] = -INFINITY;
      }
    }

    // --- online softmax, two rows per lane --------------------------------------------------------
    float mx_lo = m_lo, mx_hi = m_hi;
#pragma unroll
    for (int j = 0; j < Cfg::kSTiles; ++j) {
      mx_lo = fmaxf(mx_lo, fmaxf(acc_s[j][0], acc_s[j][1]));
      mx_hi = fmaxf(mx_hi, fmaxf(acc_s[j][2], acc_s[j][3]));
    }
#pragma unroll
    for (int o2 = 1; o2 <= 2; o2 *= 2) {  // the quad: lanes 4g .. 4g + 3
      mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xFFFFFFFFu, mx_lo, o2));
      mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xFFFFFFFFu, mx_hi, o2));
    }
    const float base_lo = mx_lo == -INFINITY ? 0.0f : mx_lo * scale_log2;  // nothing visible yet: 0
    const float base_hi = mx_hi == -INFINITY ? 0.0f : mx_hi * scale_log2;
    const float alpha_lo = exp2f(m_lo * scale_log2 - base_lo);  // m = -inf: 0 (nothing to rescale)
    const float alpha_hi = exp2f(m_hi * scale_log2 - base_hi);
    m_lo = mx_lo;
    m_hi = mx_hi;
    l_lo *= alpha_lo;
    l_hi *= alpha_hi;
#pragma unroll
    for (int j = 0; j < Cfg::kOTiles; ++j) {
      acc_o[j][0] *= alpha_lo;
      acc_o[j][1] *= alpha_lo;
      acc_o[j][2] *= alpha_hi;
      acc_o[j][3] *= alpha_hi;
    }
#pragma unroll
    for (int j = 0; j < Cfg::kSTiles; ++j) {  // p = exp2(s * scale log2 e - base): one FFMA, one EX2
      acc_s[j][0] = exp2f(fmaf(acc_s[j][0], scale_log2, -base_lo));
      acc_s[j][1] = exp2f(fmaf(acc_s[j][1], scale_log2, -base_lo));
      acc_s[j][2] = exp2f(fmaf(acc_s[j][2], scale_log2, -base_hi));
      acc_s[j][3] = exp2f(fmaf(acc_s[j][3], scale_log2, -base_hi));
      l_lo += acc_s[j][0] + acc_s[j][1];
      l_hi += acc_s[j][2] + acc_s[j][3];
    }

    // --- P as BF16 A fragments, straight from the accumulators ------------------------------------
    uint32_t pf[Cfg::kPSteps][4];
#pragma unroll
    for (int s = 0; s < Cfg::kPSteps; ++s) {
      pf[s][0] = pack_bf16(acc_s[2 * s][0], acc_s[2 * s][1]);          // row g,     keys 16s + 2c, +1
      pf[s][1] = pack_bf16(acc_s[2 * s][2], acc_s[2 * s][3]);          // row g + 8, keys 16s + 2c, +1
      pf[s][2] = pack_bf16(acc_s[2 * s + 1][0], acc_s[2 * s + 1][1]);  // row g,     keys 16s + 8 + 2c, +1
      pf[s][3] = pack_bf16(acc_s[2 * s + 1][2], acc_s[2 * s + 1][3]);  // row g + 8, keys 16s + 8 + 2c, +1
    }

    cp_async_wait<1>();  // V_t has landed (only K_{t+1} may still be on its way)
    __syncthreads();
    // V_{t+1} into the other stage, which held V_{t-1} (read by every warp before the first barrier).
    if (t + 1 < tiles) load_tile<Cfg, kBc>(sV + (1 - stage) * Cfg::kKVElems, vh, kv0 + kBc, Sk, D, br.ldk);
    cp_async_commit();

    // --- O += P V_t: 16 rows x kD per warp --------------------------------------------------------
#pragma unroll
    for (int s = 0; s < Cfg::kPSteps; ++s) {
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {  // d 16 dp .. 16 dp + 15: accumulator tiles 2 dp, 2 dp + 1
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, smem_u32(sVt + (s * 16 + (lane % 16)) * kP + dp * 16 + (lane / 16) * 8));
        mma_16816<bf16>(acc_o[2 * dp], pf[s], vb[0], vb[1]);
        mma_16816<bf16>(acc_o[2 * dp + 1], pf[s], vb[2], vb[3]);
      }
    }
  }
  cp_async_wait<0>();  // nothing in flight when the block ends (the last groups are empty)

  // --- epilogue: one division per row, O through shared memory, 16-byte stores -----------------
#pragma unroll
  for (int o2 = 1; o2 <= 2; o2 *= 2) {
    l_lo += __shfl_xor_sync(0xFFFFFFFFu, l_lo, o2);
    l_hi += __shfl_xor_sync(0xFFFFFFFFu, l_hi, o2);
  }
  const float inv_lo = l_lo > 0.0f ? 1.0f / l_lo : 0.0f;  // a row that saw no key: o = 0
  const float inv_hi = l_hi > 0.0f ? 1.0f / l_hi : 0.0f;
  // The warp's 16 rows of O go where its 16 rows of Q were (only this warp ever read them).
  bf16* sO = sQ + warp * 16 * kP;
#pragma unroll
  for (int j = 0; j < Cfg::kOTiles; ++j) {
    const int col = j * 8 + 2 * qd;
    *reinterpret_cast<__nv_bfloat162*>(sO + g * kP + col) = __floats2bfloat162_rn(acc_o[j][0] * inv_lo, acc_o[j][1] * inv_lo);
    *reinterpret_cast<__nv_bfloat162*>(sO + (g + 8) * kP + col) =
        __floats2bfloat162_rn(acc_o[j][2] * inv_hi, acc_o[j][3] * inv_hi);
  }
  __syncwarp();
  constexpr int kPerRow = kD / 8;
#pragma unroll
  for (int c = lane; c < 16 * kPerRow; c += 32) {
    const int r = c / kPerRow, p = c % kPerRow, row = q0 + warp * 16 + r;
    if (row < R && p * 8 < D) {
      *reinterpret_cast<uint4*>(oh + static_cast<size_t>(row) * br.ldq + p * 8) =
          *reinterpret_cast<const uint4*>(sO + r * kP + p * 8);
    }
  }
  if (qd == 0) {  // lse = m scale + log(l): natural log, scores in their scaled units
    if (row_lo < R) lh[row_lo] = l_lo > 0.0f ? m_lo * scale + logf(l_lo) : -INFINITY;
    if (row_hi < R) lh[row_hi] = l_hi > 0.0f ? m_hi * scale + logf(l_hi) : -INFINITY;
  }
#else
  __trap();  // not reached: the variant needs compute capability 8.0 (mma.sync BF16, cp.async)
#endif
}

// grid (row tiles, row sets): dense, ceil(G * Sq / kBr) x (B * Hkv); ragged,
// ceil(max_seqlen / kBr) x (B * Hq).
template <class Cfg>
void launch(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const Heads& heads, int row_tiles,
            int row_sets, int D, float scale, bool causal, cudaStream_t stream) {
  auto* kernel = &flash_mma_kernel<Cfg>;
  static const bool raised = [&] {  // above 48 KB a kernel must opt in (once per configuration)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
    return true;
  }();
  (void)raised;
  const float scale_log2 = scale * 1.4426950408889634f;  // log2(e)
  kernel<<<dim3(row_tiles, row_sets), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(q, k, v, o, lse, heads, D, scale,
                                                                                 scale_log2, causal);
  WB_CHECK_LAUNCH();
}

// The tile configuration per padded head size (4 warps, 64 keys: see "Tuning").
void dispatch(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const Heads& heads, int rows,
              int row_sets, int D, float scale, bool causal, cudaStream_t stream) {
  const int row_tiles = ceil_div(rows, 64);  // kBr = 16 x 4 warps in every configuration below
  if (row_tiles == 0) return;                // a ragged batch of empty sequences
  if (row_tiles > 0x7FFFFFFF / 64) throw std::invalid_argument("v4_flash_mma_sync: too many rows");
  switch (padded_head(D)) {
    case 32: launch<Tile<32, 4, 64>>(q, k, v, o, lse, heads, row_tiles, row_sets, D, scale, causal, stream); break;
    case 64: launch<Tile<64, 4, 64>>(q, k, v, o, lse, heads, row_tiles, row_sets, D, scale, causal, stream); break;
    case 96: launch<Tile<96, 4, 64>>(q, k, v, o, lse, heads, row_tiles, row_sets, D, scale, causal, stream); break;
    default: launch<Tile<128, 4, 64>>(q, k, v, o, lse, heads, row_tiles, row_sets, D, scale, causal, stream); break;
  }
}

void check_aligned(const bf16* q, const bf16* k, const bf16* v, const bf16* o) {
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k), static_cast<const void*>(v),
                        static_cast<const void*>(o)}) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
      throw std::invalid_argument("v4_flash_mma_sync: q, k, v and o must be 16-byte aligned (ch08.cuh)");
    }
  }
}

}  // namespace

void v4_attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                       int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_args("v4_flash_mma_sync", B, H, Sq, Sk, D);
  check_aligned(q, k, v, o);
  const Heads heads{Sq, Sk, 1, H, H, 0, nullptr};
  dispatch(q, k, v, o, lse, heads, Sq, B * H, D, scale, causal, stream);
}

void v4_attention_gqa_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int Hq, int Hkv,
                           int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_args("v4_flash_mma_sync", B, Hq, Sq, Sk, D);
  check_groups("v4_flash_mma_sync", Hq, Hkv);
  check_aligned(q, k, v, o);
  const int G = Hq / Hkv;
  if (static_cast<long long>(G) * Sq > 0x7FFFFFFF) throw std::invalid_argument("v4_flash_mma_sync: G * Sq too large");
  const Heads heads{Sq, Sk, G, Hq, Hkv, 0, nullptr};
  dispatch(q, k, v, o, lse, heads, G * Sq, B * Hkv, D, scale, causal, stream);
}

void v4_attention_ragged_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const int* cu_seqlens,
                              int B, int T, int Hq, int Hkv, int max_seqlen, int D, float scale, bool causal,
                              void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_ragged_args("v4_flash_mma_sync", B, T, Hq, Hkv, max_seqlen, D);
  check_aligned(q, k, v, o);
  const Heads heads{0, 0, Hq / Hkv, Hq, Hkv, T, cu_seqlens};
  dispatch(q, k, v, o, lse, heads, max_seqlen, B * Hq, D, scale, causal, stream);
}

}  // namespace ch08::solution
