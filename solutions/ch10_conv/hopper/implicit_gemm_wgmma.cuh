// The pieces of the Hopper implicit GEMM that v8 (implicit_gemm_wgmma_kernel.cu: one tile a
// block), v12 (implicit_gemm_wgmma_persistent_kernel.cu: persistent blocks walking tiles) and
// v13 (implicit_gemm_im2col_tma_kernel.cu: v12 with A by TMA in im2col mode) share, and v14
// (implicit_gemm_mma_tma_kernel.cu: v13's producer feeding mma.sync warps) in part, built for
// sm_90a alone (the chapter's Hopper library):
//   * the GEMM's sizes (Dims) and the step: 64 channels of one tap, taps inside channel chunks;
//   * the wgmma instructions of a consumer warpgroup (64 pixels x 64 or 128 filters, k16) and
//     one 64-deep step of them on a stage (consume_step);
//   * the producer's im2col gather (ImcolRows: a thread's 16-byte chunk of BM / 16 rows, by
//     cp.async with zero-fill, into the 128-byte swizzle) and the walk over the steps (next_step);
//   * the staged epilogue's two halves: the accumulators into an FP32 tile in shared memory
//     (park_accumulators), then 8 channels of one pixel folded, ReLU'd and stored (store8_staged);
//   * v13's im2col copy of A (tma_load_im2col_4d) and its one-thread producer (im2col_producer;
//     v13 and v14);
//   * the persistent kernels' consumer warpgroups, K loop and register epilogue
//     (persistent_consumers; v12 and v13), and their launch plan (plan_persistent);
//   * the host's tensor map of the filters (w as (C, R S, K), (64, 1, BN) boxes, 128-byte
//     swizzle), cached for the last call.
// What each piece does and why: implicit_gemm_wgmma_kernel.cu's header (v12's and v13's
// kernel files for theirs).
#pragma once
#include <cuda.h>

#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/sm90.cuh"
#include "conv_common.cuh"

// The kernels' bodies are built for sm_90a alone (wgmma, setmaxnreg); elsewhere they trap, and
// the launchers never run them there.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CH10_SM90A 1
#endif

namespace ch10::solution::hopper {

constexpr int kBK = 64;             // channels per K step
constexpr int kRowBytes = kBK * 2;  // one 128-byte swizzled row per pixel (A) or filter (B)
constexpr int kProducers = 128;     // the producer warpgroup
constexpr int kOutPad = 8;          // floats of padding per row of the staged output tile

struct Dims {
  ConvShape s;
  int P, Q, M;
  int steps;  // ceil(C / 64) chunks x R x S taps
};

// The GEMM view of a convolution: M = N P Q output pixels, K steps of 64 channels of one tap.
inline Dims dims_of(const ConvShape& s) {
  Dims d{s, s.P(), s.Q(), 0, 0};
  d.M = s.N * d.P * d.Q;
  d.steps = wb::ceil_div(s.C, kBK) * s.R * s.S;
  return d;
}

// The accumulators' places in the asm templates: "%0, ..., %31" and "%32, ..., %63".
#define CH10_ACC_0_31                                                      \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define CH10_ACC_32_63                                                               \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

// d (64 x 64 per warpgroup, 32 FP32 per thread) += A (64 x 16) * B (16 x 64), both K-major in
// shared memory (imm-trans-a = imm-trans-b = 0), BF16 in, FP32 accumulate.
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16\n"
      "{" CH10_ACC_0_31
      "},\n"
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : WB_WGMMA_D32(d, 0)
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

// d (64 x 128 per warpgroup, 64 FP32 per thread) += A (64 x 16) * B (16 x 128), as above.
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n"
      "{" CH10_ACC_0_31 ", " CH10_ACC_32_63
      "},\n"
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : WB_WGMMA_D64(d)
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

template <int BN>
__device__ __forceinline__ void wgmma_step(float (&d)[BN / 2], uint64_t desc_a, uint64_t desc_b) {
  if constexpr (BN == 64)
    wgmma_m64n64k16(d, desc_a, desc_b);
  else
    wgmma_m64n128k16(d, desc_a, desc_b);
}

// One 64-deep step of a consumer warpgroup: its 64 rows of A (a_rows: the stage + 64 cw rows)
// times the BN rows of B, as 4 wgmmas of k16 (a slice kk starts 32 bytes further in each row;
// stride byte offset 1024: one 8-row group to the next; the leading offset is unused, 16).
template <int BN>
__device__ __forceinline__ void consume_step(float (&acc)[BN / 2], uint32_t a_rows, uint32_t b_rows) {
#pragma unroll
  for (int kk = 0; kk < kBK / 16; ++kk) {
    wgmma_step<BN>(acc, wb::sm90::make_desc(a_rows + kk * 32, 16, 1024),
                   wb::sm90::make_desc(b_rows + kk * 32, 16, 1024));
  }
}

// v13's A operand by the copy engine: an im2col box of x (map: NHWC x as (C, W, H, N), made
// by cuTensorMapEncodeIm2col) lands at `dst`, completing on `bar`: 128 (pixelsPerColumn)
// consecutive output pixels, from the one whose tap (0, 0) is at (w, h) of image n, walked as
// the GEMM's rows walk them (q fastest, then p, then n; the stride is the map's traversal
// stride), each the 64 (channelsPerPixel) channels from c of its tap (off_h, off_w) = (r, s),
// one 128-byte swizzled row a pixel. Taps in the padding, channels past C and pixels past the
// last image arrive as zeros. Coordinates innermost first, as the map's dimensions.
__device__ __forceinline__ void tma_load_im2col_4d(uint32_t dst, const CUtensorMap* map, int c, int w, int h, int n,
                                                   uint16_t off_w, uint16_t off_h, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5}], [%6], {%7, %8};\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(off_w), "h"(off_h)
      : "memory");
}

// The step after tap (r, s) of the channels from c: the next tap, and past the last tap the
// next chunk of 64 channels (s fastest, as v6 walks them).
__device__ __forceinline__ void next_step(const ConvShape& sh, int& r, int& s, int& c) {
  if (++s == sh.S) {
    s = 0;
    if (++r == sh.R) {
      r = 0;
      c += kBK;
    }
  }
}

// The producer of v13 and v14 (implicit_gemm_im2col_tma_kernel.cu, implicit_gemm_mma_tma_kernel.cu),
// one thread of the block: tile after tile (tiles blockIdx.x, + gridDim.x, ...), step after step,
// the stage and its phase running on across tiles. A step: wait until every consumer warp has
// released the stage (empty), expect its bytes on the full barrier, one im2col copy of A (128
// pixel rows from the tile's first pixel m0 = (n, p, q), whose tap (0, 0) is at (w0, h0)) and,
// unless the filters are resident, one (64, 1, BN) box of w. T: BM, BN, kStages, the A stages
// (kAStage each) from `base`, then the B stages (kBStage each); kResident: instead of B stages,
// every step's box of the block's one filter tile at base + kPipe (step t at + t kBStage),
// loaded once on `b_bar` (the grid a multiple of tiles_n, so that block b's tiles all have
// filter tile b % tiles_n). map_x: x in im2col mode; map_w: w as (C, R S, K).
template <class T>
__device__ __forceinline__ void im2col_producer(uint32_t base, const CUtensorMap* map_x, const CUtensorMap* map_w,
                                                uint64_t* full_bar, uint64_t* empty_bar, uint64_t* b_bar, const Dims& d,
                                                int tiles_n, int tiles) {
#if defined(CH10_SM90A)
  using namespace wb::sm90;
  using wb::ptx::smem_u32;
  constexpr int kStages = T::kStages;
  const ConvShape& s = d.s;
  const int pq_count = d.P * d.Q;
  if constexpr (T::kResident) {  // every step's box of the block's one filter tile, once
    const uint32_t bar = smem_u32(b_bar);
    const int k0 = int(blockIdx.x) % tiles_n * T::BN;  // the grid is a multiple of tiles_n
    mbar_arrive_expect_tx(bar, uint32_t(d.steps * T::kBStage));
    int lr = 0, ls = 0, lc = 0;
    for (int t = 0; t < d.steps; ++t) {
      tma_load_3d(base + uint32_t(T::kPipe + t * T::kBStage), map_w, lc, lr * s.S + ls, k0, bar);
      next_step(s, lr, ls, lc);
    }
  }
  int stage = 0;
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int m0 = tile / tiles_n * T::BM, k0 = tile % tiles_n * T::BN;
    const int n = m0 / pq_count, pq = m0 - n * pq_count, p = pq / d.Q, q = pq - p * d.Q;
    const int w0 = q * s.stride - s.pad, h0 = p * s.stride - s.pad;
    int lr = 0, ls = 0, lc = 0;  // the step to load: tap (lr, ls) of the channels from lc
    for (int t = 0; t < d.steps; ++t) {
      const uint32_t full = smem_u32(&full_bar[stage]);
      const uint32_t b_dst = base + uint32_t(kStages * T::kAStage + stage * T::kBStage);
      mbar_wait(smem_u32(&empty_bar[stage]), phase ^ 1);  // every consumer warp is done with it
      mbar_arrive_expect_tx(full, T::kAStage + (T::kResident ? 0 : T::kBStage));
      tma_load_im2col_4d(base + uint32_t(stage * T::kAStage), map_x, lc, w0, h0, n, uint16_t(ls), uint16_t(lr), full);
      if constexpr (!T::kResident) tma_load_3d(b_dst, map_w, lc, lr * s.S + ls, k0, full);  // (64, 1, BN) box of w
      next_step(s, lr, ls, lc);
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
  }
#endif
}

// A producer thread's share of the im2col gather of A (kARows = BM / (kThreads / 8) rows, of
// kThreads producer threads): producer tid copies the 16-byte chunk `chunk` (channels c0 + 8
// chunk ..) of tile rows row0 + kRowStep i (kRowStep = kThreads / 8: 16 for v8's warpgroup, 32
// for v12's two). Rows a multiple of 8 apart are equal modulo 8: one swizzled offset for all. Each row's pixel is split
// once, when the tile starts (im2col_row); a step only adds its tap's offset.
template <int kARows, int kThreads = kProducers>
struct ImcolRows {
  static constexpr int kRowStep = kThreads / 8;  // the tile rows a pass of the producers covers
  static_assert(kRowStep % 8 == 0, "a thread's rows are equal modulo 8: one swizzled offset for all");
  int chunk, row0;
  int h0[kARows], w0[kARows];
  int64_t base[kARows];  // x offset of the pixel's tap (0, 0) at channel 8 chunk

  // The tile whose first pixel row is m0.
  __device__ __forceinline__ void start(const Dims& d, int m0, int tid) {
    chunk = tid % 8, row0 = tid / 8;
#pragma unroll
    for (int i = 0; i < kARows; ++i) {
      im2col_row(d.s, d.P, d.Q, d.M, m0 + row0 + i * kRowStep, chunk * 8, h0[i], w0[i], base[i]);
    }
  }

  // The copies of step (tap (r, s), channels from c) into A stage `stage` (a_stage(stage): its shared address): zeros
  // where the tap falls in the padding, past C, or the row past M (cp.async's zero-fill,
  // nothing read). Rows 16 apart are equal modulo 8: one swizzled offset for all.
  template <class AStage>
  __device__ __forceinline__ void copy(const bf16* __restrict__ x, const ConvShape& s, int r, int t, int c,
                                       AStage a_stage, int stage) const {
    const uint32_t dst = wb::sm90::swizzle128_offset(row0, chunk);  // + i x 16 rows of 128 bytes
    const bool c_ok = c + chunk * 8 < s.C;  // C % 8 == 0: a chunk's 8 channels are all in or all out
    const int64_t a_tap = (int64_t(r) * s.W + t) * s.C + c;
    const uint32_t da = a_stage(stage) + dst;
#pragma unroll
    for (int i = 0; i < kARows; ++i) {
      const bool ok = c_ok && unsigned(h0[i] + r) < unsigned(s.H) && unsigned(w0[i] + t) < unsigned(s.W);
      wb::ptx::cp_async_ca_16(da + uint32_t(i * kRowStep * kRowBytes), ok ? x + base[i] + a_tap : x, ok);
    }
  }
};

// Epilogue, 1: a consumer thread's accumulators (acc[4 j + e] as chapter 5 describes: warp w
// of the warpgroup holds rows 16 w + g and + 8, filters 8 j + 2 q and + 1; g = lane / 4, q =
// lane % 4) into the FP32 tile `out` (rows of BN + kOutPad floats: the padding puts the 4 rows
// a half-warp writes 8 banks apart). r: the thread's first row in the tile (64 cw + 16 w + g).
template <int BN>
__device__ __forceinline__ void park_accumulators(const float (&acc)[BN / 2], float* out, int r, int q4) {
  constexpr int kLd = BN + kOutPad;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int c = j * 8 + 2 * q4;
    *reinterpret_cast<float2*>(out + r * kLd + c) = make_float2(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<float2*>(out + (r + 8) * kLd + c) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
  }
}

// Epilogue, 2: channels 8 c8 .. 8 c8 + 7 (filters kc ..) of tile row r, pixel m, from the FP32
// tile: folded BN (f: their parameters), + residual, ReLU, stored (epilogue_store8). v6's
// order: lanes 4-7 of each group of 8 (half = 1) read their two float4 halves the other way
// round, so that a quarter-warp covers the 32 banks once.
template <int BN>
__device__ __forceinline__ void store8_staged(const float* out, int r, int c8, int half, const Folded* f,
                                              const bf16* __restrict__ residual, bf16* __restrict__ y, int m, int kc,
                                              int K, bool vec_out) {
  constexpr int kLd = BN + kOutPad;
  const float4* src = reinterpret_cast<const float4*>(out + r * kLd + c8 * 8);
  const float4 first = src[half], second = src[half ^ 1];
  const float4 lo = half ? second : first, hi = half ? first : second;
  const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  epilogue_store8(v, f, residual, y, int64_t(m) * K + kc, kc, K, vec_out);
}

// --- the persistent kernels' consumers (v12: implicit_gemm_wgmma_persistent_kernel.cu; v13:
// implicit_gemm_im2col_tma_kernel.cu) -----------------------------------------------------

// One channel's BN parameters, read at a tile's start and folded (fold_bn, on this copy) in its
// epilogue: the loads' latency passes under the K loop instead of stalling the epilogue.
struct BnChannel {
  float bias = 0.0f, gamma = 1.0f, beta = 0.0f, mean = 0.0f, var = 1.0f;
  __device__ __forceinline__ void load(const BnParams& bn, int k) {
    bias = bn.bias[k], gamma = bn.gamma[k], beta = bn.beta[k], mean = bn.mean[k], var = bn.var[k];
  }
  __device__ __forceinline__ Folded fold(float eps) const {
    return fold_bn(BnParams{&bias, &gamma, &beta, &mean, &var, eps}, 0);
  }
};

// The epilogue of a persistent consumer warpgroup's 64 rows of a tile (v12, v13, and twice a tile
// in v13's ping-pong form), while the producer loads the next tile: a warpgroup (thread wt of it,
// in its warp `warp`, lane `lane`; it stores the 8 channels from k0 + 8 c8 of rows rr, rr + 128 /
// (BN / 8), ..; `bar` its named barrier) holds rows 64 cw .. 64 cw + 63 of the tile whose first
// pixel is m0, filters k0 .., in acc (the wgmma layout: warp w rows 16 w + g and + 8, filters 8 j +
// 2 q and + 1). f: the warpgroup's parameter set for this tile, into which thread wt folds channel
// k0 + wt where `folds` (from `channel`, read when the tile started). The BF16 output tile (rows of
// T::kLdB values at ob) is only ever touched by ordinary loads and stores.
template <class T>
__device__ __forceinline__ void persistent_epilogue(const float (&acc)[T::BN / 2], bf16* ob, Folded* f, bool folds,
                                                    const BnChannel& channel, const BnParams& bn,
                                                    const bf16* __restrict__ residual, bf16* __restrict__ y,
                                                    const Dims& d, int m0, int k0, bool vec_out, int cw, int wt,
                                                    int warp, int lane, int c8, int rr, int bar) {
#if defined(CH10_SM90A)
  using namespace wb::sm90;
  const ConvShape& s = d.s;
  constexpr int kRowsPerPass = 128 / (T::BN / 8);
  if (folds) f[wt] = channel.fold(bn.eps);
  warpgroup_barrier(bar);  // the tile's parameters are in; the tile before's rows all stored
  // The accumulators (rows r and r + 8, filters 8 j + 2 q and + 1) folded, + residual,
  // ReLU, rounded to BF16 (the same operations as epilogue_store8), into the BF16 tile.
  const int q2 = 2 * (lane % 4);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = cw * 64 + warp * 16 + lane / 4 + 8 * h, m = m0 + r;
    const bool m_ok = m < d.M;
#pragma unroll
    for (int j = 0; j < T::BN / 8; ++j) {
      const int c = j * 8 + q2, k = k0 + c;
      const float2 rp = residual_pair(residual, m, m_ok, k, s.K, vec_out);
      *reinterpret_cast<__nv_bfloat162*>(ob + r * T::kLdB + c) = __floats2bfloat162_rn(
          apply_epilogue(acc[4 * j + 2 * h], f[c], rp.x), apply_epilogue(acc[4 * j + 2 * h + 1], f[c + 1], rp.y));
      asm volatile("" ::: "memory");  // one j at a time: the compiler would load every j's parameters first
    }
  }
  warpgroup_barrier(bar);      // the warpgroup's rows are staged
  const int kc = k0 + c8 * 8;  // the first of the thread's 8 channels
  if (kc < s.K) {
#pragma unroll 2
    for (int r = cw * 64 + rr; r < cw * 64 + 64; r += kRowsPerPass) {
      const int m = m0 + r;
      if (m >= d.M) break;
      store8_out(ob + r * T::kLdB + c8 * 8, y + int64_t(m) * s.K + kc, kc, s.K, vec_out);
    }
  }
#endif
}

// The two consumer warpgroups of a persistent block (T: BM = 128 pixels, BN filters, kStages
// stages of kAStage + kBStage bytes from `base`, the BF16 output tile of rows of kLdB values
// at `ob`), tile after tile: warpgroup cw computes pixel rows 64 cw .. 64 cw + 63 of each tile,
// all BN filters, and stores them itself. kFirst: the threads before the consumers (the
// producers; a multiple of 128). kProxyFence: the stages hold generic-proxy writes (cp.async)
// that wgmma may only read after fence.proxy.async (v12); a stage written by TMA alone needs
// none (v13). What each part does and why: implicit_gemm_wgmma_persistent_kernel.cu's header.
//
// kResidentB (v13, one filter tile a block): the stages hold A alone; B is every step's box of
// the block's filter tile, resident from `b_res` (step t at b_res + t kBStage) once the barrier
// `b_bar` has completed its first phase.
template <class T, int kFirst, bool kProxyFence, bool kResidentB = false>
__device__ __forceinline__ void persistent_consumers(uint32_t base, bf16* ob, uint64_t* full_bar, uint64_t* empty_bar,
                                                     Folded (*sF)[2][T::BN], const BnParams& bn,
                                                     const bf16* __restrict__ residual, bf16* __restrict__ y,
                                                     const Dims& d, int tiles_n, int tiles, bool vec_out, int tid,
                                                     int lane, [[maybe_unused]] uint32_t b_res = 0,
                                                     [[maybe_unused]] uint64_t* b_bar = nullptr) {
#if defined(CH10_SM90A)
  using namespace wb::sm90;
  using wb::ptx::smem_u32;
  constexpr int kStages = T::kStages;
  auto a_stage = [&](int st) { return base + uint32_t(st * T::kAStage); };
  auto b_stage = [&](int st) { return base + uint32_t(kStages * T::kAStage + st * T::kBStage); };
  auto full = [&](int st) { return smem_u32(&full_bar[st]); };
  auto empty = [&](int st) { return smem_u32(&empty_bar[st]); };
  const ConvShape& s = d.s;

  const int cw = (tid - kFirst) / 128, wt = tid % 128, warp = wt / 32;
  const int c8 = wt % (T::BN / 8),
            rr = wt / (T::BN / 8);  // the epilogue's stores: 8 channels of rows rr + 128 / (BN / 8) i
  float acc[T::BN / 2];
  int stage = 0;
  uint32_t phase = 0;
  int tile_parity = 0;
  if constexpr (kResidentB) mbar_wait(smem_u32(b_bar), 0);  // the block's filters are in
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, tile_parity ^= 1) {
    const int m0 = tile / tiles_n * T::BM, k0 = tile % tiles_n * T::BN;
    const bool folds = wt < T::BN && k0 + wt < s.K;  // this thread folds channel k0 + wt
    BnChannel channel;
    if (folds) channel.load(bn, k0 + wt);
#pragma unroll
    for (int i = 0; i < T::BN / 2; ++i) acc[i] = 0.0f;
    int held = -1;  // the stage whose wgmmas may still be reading shared memory
    for (int t = 0; t < d.steps; ++t) {
      mbar_wait(full(stage), phase);                    // every byte of the step's stage is in
      if constexpr (kProxyFence) fence_async_shared();  // ... and visible to the async proxy, which wgmma reads through
      pin(acc);
      wgmma_fence();
      if constexpr (kResidentB) {
        consume_step<T::BN>(acc, a_stage(stage) + uint32_t(cw * 64 * kRowBytes), b_res + uint32_t(t * T::kBStage));
      } else {
        consume_step<T::BN>(acc, a_stage(stage) + uint32_t(cw * 64 * kRowBytes), b_stage(stage));
      }
      wgmma_commit();
      wgmma_wait<1>();  // the step before's wgmmas are done reading their stage
      pin(acc);
      if (held >= 0 && lane == 0) mbar_arrive(empty(held));
      held = stage;
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
    wgmma_wait<0>();
    pin(acc);
    if (lane == 0) mbar_arrive(empty(held));  // the last stage too: the next tile's steps fill it

    // --- epilogue of this warpgroup's 64 rows, while the producers load the next tile. Two sets
    // of parameters, by the tile's parity: the set written here was last read two tiles ago,
    // before the barriers of the tile in between.
    persistent_epilogue<T>(acc, ob, sF[cw][tile_parity], folds, channel, bn, residual, y, d, m0, k0, vec_out, cw, wt,
                           warp, lane, c8, rr, 1 + cw);
    __syncwarp();  // the warp whole again before the next tile's wgmmas (.aligned)
  }
#endif
}

// --- host ------------------------------------------------------------------------------

// A persistent launch: tiles = ceil(M / bm) x tiles_n (tiles_n = ceil(K / bn); bm = 128 but in
// v14's 96-pixel tiles), a grid of
// min(tiles, SMs) blocks, and the model's cost of its busiest block: ceil(tiles / grid) tiles,
// each of `steps` steps costing `step` plus a fixed `fixed` (the fill and the share of the
// epilogue that the next tile's loads do not hide), in units of one (128, 64) step.
struct Plan {
  int tiles_n, tiles, grid;
  double cost;
};

inline Plan plan_persistent(const Dims& d, int bn, int sms, double step, double fixed, int bm = 128) {
  Plan p{};
  p.tiles_n = wb::ceil_div(d.s.K, bn);
  const long long tiles = (long long)wb::ceil_div(d.M, bm) * p.tiles_n;
  p.tiles = tiles < (1LL << 30) ? int(tiles) : -1;  // -1: too many for the kernels' int tile index
  p.grid = int(std::min<long long>(tiles, sms));
  const long long rounds = wb::ceil_div(tiles, (long long)p.grid);
  p.cost = double(rounds) * (d.steps * step + fixed);
  return p;
}

// --- host (implicit_gemm_wgmma_kernel.cu, implicit_gemm_im2col_tma_kernel.cu) -----------

// w (K x R x S x C, BF16) as a 3-D tensor (C innermost, R S taps, K filters) read in (64, 1,
// box_k) boxes with the 128-byte swizzle, zeros outside; the map of the last call is kept, so
// that timing a call does not time its encoding.
const CUtensorMap& filter_map(const bf16* w, const ConvShape& s, int box_k);

// x (N x H x W x C, BF16) in im2col mode for v13 and v14 (implicit_gemm_im2col_tma_kernel.cu):
// (C, W, H, N), 64 channels x `pixels` pixels a copy (128; v14 also 96), the 128-byte swizzle,
// zeros outside; the map of the last call with that many pixels is kept. Null where the shape is
// outside what an im2col map describes (a stride over 8, padding or corners past the map's 8-bit
// offsets, filters over 64 taps a side) or the driver refuses it: the caller runs another path.
const CUtensorMap* activation_map(const bf16* x, const ConvShape& s, int P, int Q, int pixels = 128);

}  // namespace ch10::solution::hopper
