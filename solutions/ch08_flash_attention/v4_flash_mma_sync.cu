// v4 — flash attention in BF16 on tensor cores: the FlashAttention-2 forward structure with
// mma.sync.m16n8k16 (FP32 accumulation), cp.async and ldmatrix.
//
// What changes over v3: both products run on tensor cores, and their operands live in
// registers. The work split is FlashAttention-2's: a block owns Br = 16 kMT x kWarps query
// rows, each warp 16 kMT of them (kMT m16 tiles: warp w rows 16 kMT w .. 16 kMT w + 16 kMT - 1),
// and the warps never exchange anything: each keeps its rows' running max, sum and output to
// itself. Per block:
//
//   prologue   cp.async Q (Br x D) and K_0 (Bc x D)  | commit        group A
//              cp.async V_0                           | commit        group B
//              wait for A; barrier; ldmatrix Q -> registers (kMT x kD / 16 A fragments per
//              warp; with kQRegs = false, none: see "Tuning")
//   tile t     wait for K_t; barrier                   (K_t visible to all; tile t-1 done)
//              cp.async K_{t+1} into the other K stage | commit
//              S = Q K_t^T              (16 kMT x Bc per warp, kMT x kBc / 8 accumulator tiles)
//              mask (diagonal and last tiles only), online softmax on the accumulators
//              P -> BF16 A fragments    (no shared memory: see "P from registers" below)
//              wait for V_t; barrier
//              cp.async V_{t+1} into the other V stage | commit
//              O += P V_t               (16 kMT x D per warp, kMT x kD / 8 accumulator tiles)
//   epilogue   l summed over the quad; O / l into shared memory (where Q was); 16-byte stores;
//              lse = m * scale + log(l)
//
// Each K fragment (in S) and each V fragment (in P V) is loaded from shared memory once per
// warp and fed to the mma of all kMT m16 tiles: with kMT = 2 a warp reads half as many bytes
// of K and V per FLOP as with kMT = 1.
//
// The two waits keep one load in flight at all times: K_{t+1} streams in while S, the softmax
// and P V_t run, V_{t+1} while P V_t and S_{t+1} run. The barriers also order the stages:
// when a warp passes the first barrier of tile t, every warp has finished tile t - 1, so
// tile t - 1's K and V stages may be overwritten with tile t + 1.
//
// Lane maps (lane l of a warp, g = l / 4, c = l % 4; mma.sync.m16n8k16.row.col, BF16 in,
// FP32 accumulate; ldmatrix as in harness/device/mma.cuh). Rows below are those of
// one m16 tile mt of warp w: row g is the block's row 16 kMT w + 16 mt + g, row g + 8 is
// 16 kMT w + 16 mt + g + 8; every tile mt has the same maps, its own accumulators.
//   A (16 x 16)  a0 = (row g, k 2c, 2c+1)   a1 = (row g+8, k 2c..)   a2 = (row g, k 2c+8..)
//                a3 = (row g+8, k 2c+8..)   (two BF16 per register, the lower k in the low half)
//   B (16 x 8)   b0 = (k 2c, 2c+1; col g)   b1 = (k 2c+8, 2c+9; col g)
//   C (16 x 8)   c0, c1 = (row g, cols 2c, 2c+1)   c2, c3 = (row g+8, cols 2c, 2c+1)
//
//   Q (A of S = Q K^T): ldmatrix.x4 on rows 16 kMT w + 16 mt + (l % 16), columns 16 kk + 8 (l / 16)
//     of the Q tile gives a0..a3 of k-step kk (the four 8 x 8 quarters in A's register order).
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
// kD = 128, 4 warps of one m16 tile, Bc = 64: two blocks per SM on an H100 (228 KB), one on an
// A100 (164 KB); 104 KB with two m16 tiles per warp (Br = 128), still two on an H100.
// Edges: cp.async fills zeros past Sq, Sk and D (its source size 0), so a partial tile
// computes on zeros, and the mask removes keys past Sk before the softmax.
//
// Tuning: the tile configuration is a template parameter, Tile<kD, kWarps, kBc, kMT, kQRegs,
// kMinBlocks> below, and each knob trades one thing for another:
//   * kMT, m16 tiles of query rows per warp (1 or 2). Two tiles use every K and V fragment
//     that ldmatrix brings into registers for two mma instead of one, halving the shared-memory
//     reads of K and V per FLOP (FlashAttention-2 at D = 128: 4 warps of 32 rows, Br = 128).
//     The price: twice the accumulators (acc_o alone is kMT kD / 2 registers per thread: 128
//     at kD = 128), and a Q tile twice as large in shared memory.
//   * kWarps, warps per block (Br = 16 kMT kWarps). More warps share each K and V tile that a
//     block loads, and hide more latency per block; but a block waits at every barrier for its
//     slowest warp, and with the causal mask a taller block computes more masked scores.
//   * kBc, keys per tile. More keys per tile mean fewer barriers and softmax rescalings of acc_o
//     per key; but the S accumulators (kMT kBc / 2 registers) and the K and V stages grow.
//   * kQRegs, Q's A fragments in registers for the whole loop (true) or read again from shared
//     memory at each k-step of every tile (false). False frees kMT kD / 4 registers (64 at
//     kMT = 2, kD = 128), at the cost of one more ldmatrix per k-step and m16 tile: at kD = 128
//     it is what lets two tiles per warp with Bc = 64 fit in 255 registers without spilling.
//   * kMinBlocks, the minimum blocks per SM in __launch_bounds__: ptxas keeps each thread under
//     65536 / (kMinBlocks x 32 kWarps) registers (at most 255). 2 suits 4 warps; 8 warps need 1,
//     or ptxas must fit them in 128 registers.
// dispatch() uses what a sweep of all of them measured best on an H100 (B 4, H 16, S 8192,
// D 64 and 128, causal and not): 4 warps of two m16 tiles, Q re-read from shared memory, 64
// keys per tile at kD = 128 and 128 at kD = 64. Against the first configuration (4 warps of
// one tile, 64 keys, Q in registers; 270-276 TFLOPS at kD = 128) that is 334-339 TFLOPS, and
// most of the gain is kMT: every configuration in the top five has two tiles per warp.
//
// Part 2 of the chapter runs the same kernel on two more layouts (the Heads struct below
// says which); only where a block's rows and keys are changes, never the loop:
//   * grouped heads (GQA / MQA, attention_gqa/bf16): the G = Hq / Hkv query heads of one kv
//     head are neighbours in q, so their rows form ONE matrix of G * Sq rows (row r = g Sq + i,
//     contiguous in q, o and lse) against one K and one V. A block takes Br of those rows:
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
// From attention_common.cuh: the checks, zero_fill (the accumulator fragments set to 0) and
// the shared-memory opt-in (wb::allow_dynamic_smem, harness/runtime/launch_helpers.cuh).
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16 --impl=v4_flash_mma_sync,cudnn_sdpa,cublas_unfused
#include <cstdint>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "ladder.cuh"

namespace ch08::solution {
namespace {

using namespace wb::ptx;  // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)

// A tile configuration: head size kD (the padded one), kWarps warps of kMT m16 tiles of query
// rows each, kBc keys per tile. kQRegs: Q's A fragments stay in registers for the whole loop
// (true), or are read again from shared memory with ldmatrix at each k-step of S = Q K^T
// (false; kMT kD / 4 registers fewer per thread). kMinBlocks: the blocks per SM that
// __launch_bounds__ asks ptxas to leave registers for (65536 / (kMinBlocks kThreads) each,
// at most 255). See "Tuning" in the header comment.
template <int kD_, int kWarps_, int kBc_, int kMT_ = 1, bool kQRegs_ = true, int kMinBlocks_ = 2>
struct Tile {
  static constexpr int kD = kD_, kWarps = kWarps_, kBc = kBc_, kMT = kMT_, kMinBlocks = kMinBlocks_;
  static constexpr bool kQRegs = kQRegs_;
  static constexpr int kWarpRows = 16 * kMT;      // query rows per warp: kMT m16 tiles
  static constexpr int kBr = kWarpRows * kWarps;  // query rows per block
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kPitch = kD + 8;          // shared-memory row pitch in BF16 (16 bytes of padding)
  static constexpr int kQElems = kBr * kPitch;   // the Q tile (later the O tile)
  static constexpr int kKVElems = kBc * kPitch;  // one stage of K or of V
  static constexpr int kSmemBytes = (kQElems + 4 * kKVElems) * static_cast<int>(sizeof(bf16));
  static constexpr int kKSteps = kD / 16;   // k-steps of S = Q K^T
  static constexpr int kSTiles = kBc / 8;   // 16 x 8 accumulator tiles of S per m16 tile
  static constexpr int kPSteps = kBc / 16;  // k-steps of O = P V
  static constexpr int kOTiles = kD / 8;    // 16 x 8 accumulator tiles of O per m16 tile
  static_assert(kD % 16 == 0 && kD <= 256, "head size: whole k16 steps of Q K^T and d16 pairs of P V");
  static_assert(kBc % 16 == 0, "keys per tile: whole k16 steps of P V (and one ldmatrix.x4 of K covers 16 keys)");
  static_assert(kMT == 1 || kMT == 2, "m16 tiles per warp: 1 or 2 (more accumulators do not fit 255 registers)");
  static_assert(kMinBlocks >= 1, "blocks per SM for __launch_bounds__");
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
  if constexpr (Cfg::kThreads % kPerRow == 0) {
    // The block's threads cover kStep whole rows per pass, so a thread's pieces are all in one
    // column, kStep rows apart: one source pointer, stepped. (With each piece's address computed
    // as src + (row0 + r) ld + 8 p, as in the branch below, ptxas -v reported 230 registers per
    // thread at kD = 128, 4 warps of one m16 tile; 200 this way.)
    constexpr int kStep = Cfg::kThreads / kPerRow;
    const int r = threadIdx.x / kPerRow, p = threadIdx.x % kPerRow;
    const int rows_left = rows_total - row0 - r;  // this thread's pieces n with n kStep < rows_left are in
    const bf16* s = src + static_cast<size_t>(row0 + r) * ld + p * 8;
#pragma unroll
    for (int n = 0; n < kPieces / Cfg::kThreads; ++n) {
      const bool in = n * kStep < rows_left && p * 8 < D;
      cp_async_16(dst + (r + n * kStep) * Cfg::kPitch + p * 8, in ? s : src, in);
      s += kStep * ld;
    }
  } else {  // kD = 96: 12 pieces per row, a thread's pieces in different columns
#pragma unroll
    for (int n = 0; n < kPieces / Cfg::kThreads; ++n) {
      const int c = threadIdx.x + n * Cfg::kThreads, r = c / kPerRow, p = c % kPerRow;
      const bool in = row0 + r < rows_total && p * 8 < D;
      cp_async_16(dst + r * Cfg::kPitch + p * 8, in ? src + static_cast<size_t>(row0 + r) * ld + p * 8 : src, in);
    }
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
  float* lse;  // row r's lse at lse[r]
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

// The A fragments a0..a3 of k-step kk (d 16 kk .. 16 kk + 15) of the m16 tile of Q whose first
// row is row0: ldmatrix.x4 on rows row0 + (l % 16), columns 16 kk + 8 (l / 16).
template <class Cfg>
__device__ __forceinline__ void load_q_frag(uint32_t (&a)[4], const bf16* sQ, int row0, int kk, int lane) {
  ldmatrix_x4(a, smem_u32(sQ + (row0 + lane % 16) * Cfg::kPitch + kk * 16 + (lane / 16) * 8));
}

// Cfg::kMinBlocks (2 in every configuration dispatch() uses) blocks per SM: what an H100's
// shared memory allows at kD = 128 with 4 warps of two m16 tiles (104 KB per block; the register
// budget that follows, 255 per thread, is just enough: ptxas uses 253-255 and spills nothing).
// Without the minimum, ptxas capped kD = 64 and 96 near 128 registers on sm_90a and spilled.
// At 8 warps a minimum of 2 caps a thread at 128 registers: such a configuration asks for 1.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    flash_mma_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                     bf16* __restrict__ o, float* __restrict__ lse, Heads heads, int D, float scale, float scale_log2,
                     bool causal) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kBr = Cfg::kBr, kBc = Cfg::kBc, kP = Cfg::kPitch, kD = Cfg::kD, kMT = Cfg::kMT;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // (kBr, kP): Q, then O
  bf16* sK = sQ + Cfg::kQElems;                  // 2 x (kBc, kP)
  bf16* sV = sK + 2 * Cfg::kKVElems;             // 2 x (kBc, kP)

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
  // The warp's rows are w0 .. w0 + 16 kMT - 1 of the block; of m16 tile mt, this lane holds rows
  // w0 + 16 mt + g (h = 0: accumulator elements 0, 1) and w0 + 16 mt + g + 8 (h = 1: elements 2, 3).
  const int w0 = warp * Cfg::kWarpRows;

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

  // --- prologue: Q and the first K and V tiles; with kQRegs, Q's fragments into registers ----
  load_tile<Cfg, kBr>(sQ, qh, q0, R, D, br.ldq);
  load_tile<Cfg, kBc>(sK, kh, 0, Sk, D, br.ldk);
  cp_async_commit();  // group A: Q, K_0
  load_tile<Cfg, kBc>(sV, vh, 0, Sk, D, br.ldk);
  cp_async_commit();   // group B: V_0
  cp_async_wait<1>();  // A has landed (this thread's copies) ...
  __syncthreads();     // ... and every thread's

  // A fragments of the warp's m16 tiles of Q: with kQRegs, all kKSteps k-steps (d 16 kk ..
  // 16 kk + 15) loaded once, here; without, one k-step at a time, loaded in the loop (qf[mt][0]).
  constexpr int kQSteps = Cfg::kQRegs ? Cfg::kKSteps : 1;
  uint32_t qf[kMT][kQSteps][4];
  if constexpr (Cfg::kQRegs) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < Cfg::kKSteps; ++kk) load_q_frag<Cfg>(qf[mt][kk], sQ, w0 + 16 * mt, kk, lane);
  }

  float acc_o[kMT][Cfg::kOTiles][4];
  zero_fill(acc_o);
  float m[kMT][2];   // running max of the raw scores of rows (mt, h)
  float l[kMT][2];   // this lane's part of the running sums
  int last[kMT][2];  // the last key row (mt, h) may see (by its query's position in its own head)
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = q0 + w0 + 16 * mt + 8 * h + g;
      m[mt][h] = -INFINITY;
      l[mt][h] = 0.0f;
      last[mt][h] = causal ? min(row % Sq + Sk - Sq, Sk - 1) : Sk - 1;
    }

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

    // --- S = Q K_t^T: 16 kMT rows x kBc keys per warp; each K fragment feeds kMT m16 tiles --------
    float acc_s[kMT][Cfg::kSTiles][4];
    zero_fill(acc_s);
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
      if constexpr (!Cfg::kQRegs) {  // this k-step of Q, again from shared memory
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) load_q_frag<Cfg>(qf[mt][0], sQ, w0 + 16 * mt, kk, lane);
      }
      const int qs = Cfg::kQRegs ? kk : 0;
#pragma unroll
      for (int jp = 0; jp < kBc / 16; ++jp) {  // keys 16 jp .. 16 jp + 15: accumulator tiles 2 jp, 2 jp + 1
        uint32_t kb[4];
        const int key = jp * 16 + (lane % 8) + (lane / 16) * 8, col = kk * 16 + ((lane / 8) % 2) * 8;
        ldmatrix_x4(kb, smem_u32(sKt + key * kP + col));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_16816<bf16>(acc_s[mt][2 * jp], qf[mt][qs], kb[0], kb[1]);
          mma_16816<bf16>(acc_s[mt][2 * jp + 1], qf[mt][qs], kb[2], kb[3]);
        }
      }
    }

    // --- mask: only the last tile and, with the causal mask, tiles crossing the diagonal ---------
    const bool need_mask = kv0 + kBc > Sk || (causal && kv0 + kBc - 1 > i_min + Sk - Sq);
    if (need_mask) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int j = 0; j < Cfg::kSTiles; ++j) {
          const int key = kv0 + j * 8 + 2 * qd;  // accumulator elements e = 0, 1 (row g), 2, 3 (row g + 8)
          if (key > last[mt][0]) acc_s[mt][j][0] = -INFINITY;
          if (key + 1 > last[mt][0]) acc_s[mt][j][1] = -INFINITY;
          if (key > last[mt][1]) acc_s[mt][j][2] = -INFINITY;
          if (key + 1 > last[mt][1]) acc_s[mt][j][3] = -INFINITY;
        }
    }

    // --- online softmax, 2 kMT rows per lane ------------------------------------------------------
    float mx[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      mx[mt][0] = m[mt][0];
      mx[mt][1] = m[mt][1];
#pragma unroll
      for (int j = 0; j < Cfg::kSTiles; ++j) {
        mx[mt][0] = fmaxf(mx[mt][0], fmaxf(acc_s[mt][j][0], acc_s[mt][j][1]));
        mx[mt][1] = fmaxf(mx[mt][1], fmaxf(acc_s[mt][j][2], acc_s[mt][j][3]));
      }
    }
#pragma unroll
    for (int o2 = 1; o2 <= 2; o2 *= 2)  // the quad: lanes 4g .. 4g + 3
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) mx[mt][h] = fmaxf(mx[mt][h], __shfl_xor_sync(0xFFFFFFFFu, mx[mt][h], o2));
    float base[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        base[mt][h] = mx[mt][h] == -INFINITY ? 0.0f : mx[mt][h] * scale_log2;  // nothing visible yet: 0
        const float alpha = fast_exp2(m[mt][h] * scale_log2 - base[mt][h]);    // m = -inf: 0 (nothing to rescale)
        m[mt][h] = mx[mt][h];
        l[mt][h] *= alpha;
#pragma unroll
        for (int j = 0; j < Cfg::kOTiles; ++j) {
          acc_o[mt][j][2 * h] *= alpha;
          acc_o[mt][j][2 * h + 1] *= alpha;
        }
      }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int j = 0; j < Cfg::kSTiles; ++j) {  // p = exp2(s * scale log2 e - base): one FFMA, one EX2
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][j][e] = fast_exp2(fmaf(acc_s[mt][j][e], scale_log2, -base[mt][e / 2]));
        l[mt][0] += acc_s[mt][j][0] + acc_s[mt][j][1];
        l[mt][1] += acc_s[mt][j][2] + acc_s[mt][j][3];
      }

    // --- P as BF16 A fragments, straight from the accumulators ------------------------------------
    uint32_t pf[kMT][Cfg::kPSteps][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int s = 0; s < Cfg::kPSteps; ++s) {
        pf[mt][s][0] = pack_bf16(acc_s[mt][2 * s][0], acc_s[mt][2 * s][1]);          // row g,     keys 16s + 2c, +1
        pf[mt][s][1] = pack_bf16(acc_s[mt][2 * s][2], acc_s[mt][2 * s][3]);          // row g + 8, keys 16s + 2c, +1
        pf[mt][s][2] = pack_bf16(acc_s[mt][2 * s + 1][0], acc_s[mt][2 * s + 1][1]);  // row g,     keys 16s + 8 + 2c, +1
        pf[mt][s][3] = pack_bf16(acc_s[mt][2 * s + 1][2], acc_s[mt][2 * s + 1][3]);  // row g + 8, keys 16s + 8 + 2c, +1
      }

    cp_async_wait<1>();  // V_t has landed (only K_{t+1} may still be on its way)
    __syncthreads();
    // V_{t+1} into the other stage, which held V_{t-1} (read by every warp before the first barrier).
    if (t + 1 < tiles) load_tile<Cfg, kBc>(sV + (1 - stage) * Cfg::kKVElems, vh, kv0 + kBc, Sk, D, br.ldk);
    cp_async_commit();

    // --- O += P V_t: 16 kMT rows x kD per warp; each V fragment feeds kMT m16 tiles ----------------
#pragma unroll
    for (int s = 0; s < Cfg::kPSteps; ++s) {
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {  // d 16 dp .. 16 dp + 15: accumulator tiles 2 dp, 2 dp + 1
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, smem_u32(sVt + (s * 16 + (lane % 16)) * kP + dp * 16 + (lane / 16) * 8));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_16816<bf16>(acc_o[mt][2 * dp], pf[mt][s], vb[0], vb[1]);
          mma_16816<bf16>(acc_o[mt][2 * dp + 1], pf[mt][s], vb[2], vb[3]);
        }
      }
    }
  }
  cp_async_wait<0>();  // nothing in flight when the block ends (the last groups are empty)

  // --- epilogue: one division per row, O through shared memory, 16-byte stores -----------------
#pragma unroll
  for (int o2 = 1; o2 <= 2; o2 *= 2)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) l[mt][h] += __shfl_xor_sync(0xFFFFFFFFu, l[mt][h], o2);
  // The warp's 16 kMT rows of O go where its 16 kMT rows of Q were (only this warp ever read them,
  // and with kQRegs = false its last reads came before the last tile's second barrier).
  bf16* sO = sQ + w0 * kP;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float inv = l[mt][h] > 0.0f ? 1.0f / l[mt][h] : 0.0f;  // a row that saw no key: o = 0
      bf16* sOr = sO + (16 * mt + 8 * h + g) * kP;
#pragma unroll
      for (int j = 0; j < Cfg::kOTiles; ++j) {
        *reinterpret_cast<__nv_bfloat162*>(sOr + j * 8 + 2 * qd) =
            __floats2bfloat162_rn(acc_o[mt][j][2 * h] * inv, acc_o[mt][j][2 * h + 1] * inv);
      }
    }
  __syncwarp();
  constexpr int kPerRow = kD / 8;
#pragma unroll
  for (int c = lane; c < Cfg::kWarpRows * kPerRow; c += 32) {
    const int r = c / kPerRow, p = c % kPerRow, row = q0 + w0 + r;
    if (row < R && p * 8 < D) {
      *reinterpret_cast<uint4*>(oh + static_cast<size_t>(row) * br.ldq + p * 8) =
          *reinterpret_cast<const uint4*>(sO + r * kP + p * 8);
    }
  }
  if (qd == 0) {  // lse = m scale + log(l): natural log, scores in their scaled units
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = q0 + w0 + 16 * mt + 8 * h + g;
        if (row < R) lh[row] = l[mt][h] > 0.0f ? m[mt][h] * scale + logf(l[mt][h]) : -INFINITY;
      }
  }
#else
  __trap();  // not reached: the variant needs compute capability 8.0 (mma.sync BF16, cp.async)
#endif
}

// grid (row tiles, row sets): dense, ceil(G * Sq / kBr) x (B * Hkv); ragged,
// ceil(max_seqlen / kBr) x (B * Hq). `rows` is G * Sq, or max_seqlen.
template <class Cfg>
void launch(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const Heads& heads, int rows,
            int row_sets, int D, float scale, bool causal, cudaStream_t stream) {
  const int row_tiles = ceil_div(rows, Cfg::kBr);
  if (row_tiles == 0) return;  // a ragged batch of empty sequences
  if (row_tiles > 0x7FFFFFFF / Cfg::kBr) throw std::invalid_argument("v4_flash_mma_sync: too many rows");
  auto* kernel = &flash_mma_kernel<Cfg>;
  // Above 48 KB a kernel must opt in (once per configuration).
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kernel, Cfg::kSmemBytes);
  const float scale_log2 = scale * 1.4426950408889634f;  // log2(e)
  kernel<<<dim3(row_tiles, row_sets), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(q, k, v, o, lse, heads, D, scale,
                                                                                scale_log2, causal);
  WB_CHECK_LAUNCH();
}

// The tile configuration per padded head size, from a sweep of every knob on an H100 (B 4,
// H 16, S 8192, causal and not; see "Tuning"): 4 warps of two m16 tiles (128 query rows per
// block) with Q re-read from shared memory everywhere, 64 keys per tile at kD = 128 and 96
// (128 keys spill there), 128 keys at kD = 64 and 32.
void dispatch(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const Heads& heads, int rows,
              int row_sets, int D, float scale, bool causal, cudaStream_t stream) {
  switch (padded_head(D)) {
    case 32:
      launch<Tile<32, 4, 128, 2, false>>(q, k, v, o, lse, heads, rows, row_sets, D, scale, causal, stream);
      break;
    case 64:
      launch<Tile<64, 4, 128, 2, false>>(q, k, v, o, lse, heads, rows, row_sets, D, scale, causal, stream);
      break;
    case 96:
      launch<Tile<96, 4, 64, 2, false>>(q, k, v, o, lse, heads, rows, row_sets, D, scale, causal, stream);
      break;
    default:
      launch<Tile<128, 4, 64, 2, false>>(q, k, v, o, lse, heads, rows, row_sets, D, scale, causal, stream);
      break;
  }
}

}  // namespace

void v4_attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                       int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_args("v4_flash_mma_sync", B, H, Sq, Sk, D);
  check_aligned("v4_flash_mma_sync", q, k, v, o);
  const Heads heads{Sq, Sk, 1, H, H, 0, nullptr};
  dispatch(q, k, v, o, lse, heads, Sq, B * H, D, scale, causal, stream);
}

void v4_attention_gqa_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int Hq, int Hkv,
                           int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_args("v4_flash_mma_sync", B, Hq, Sq, Sk, D);
  check_groups("v4_flash_mma_sync", Hq, Hkv);
  check_aligned("v4_flash_mma_sync", q, k, v, o);
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
  check_aligned("v4_flash_mma_sync", q, k, v, o);
  const Heads heads{0, 0, Hq / Hkv, Hq, Hkv, T, cu_seqlens};
  dispatch(q, k, v, o, lse, heads, max_seqlen, B * Hq, D, scale, causal, stream);
}

}  // namespace ch08::solution
