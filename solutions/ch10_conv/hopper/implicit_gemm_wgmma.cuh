// The pieces of the Hopper implicit GEMM that v8 (implicit_gemm_wgmma_kernel.cu: one tile a
// block) and v12 (implicit_gemm_wgmma_persistent_kernel.cu: persistent blocks walking tiles)
// share, built for sm_90a alone (the chapter's Hopper library):
//   * the GEMM's sizes (Dims) and the step: 64 channels of one tap, taps inside channel chunks;
//   * the wgmma instructions of a consumer warpgroup (64 pixels x 64 or 128 filters, k16) and
//     one 64-deep step of them on a stage (consume_step);
//   * the producer's im2col gather (ImcolRows: a thread's 16-byte chunk of BM / 16 rows, by
//     cp.async with zero-fill, into the 128-byte swizzle) and the walk over the steps (next_step);
//   * the staged epilogue's two halves: the accumulators into an FP32 tile in shared memory
//     (park_accumulators), then 8 channels of one pixel folded, ReLU'd and stored (store8_staged);
//   * the host's tensor map of the filters (w as (C, R S, K), (64, 1, BN) boxes, 128-byte
//     swizzle), cached for the last call.
// What each piece does and why: implicit_gemm_wgmma_kernel.cu's header.
#pragma once
#include <cuda.h>

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

// --- host (implicit_gemm_wgmma_kernel.cu) ----------------------------------------------

// w (K x R x S x C, BF16) as a 3-D tensor (C innermost, R S taps, K filters) read in (64, 1,
// box_k) boxes with the 128-byte swizzle, zeros outside; the map of the last call is kept, so
// that timing a call does not time its encoding.
const CUtensorMap& filter_map(const bf16* w, const ConvShape& s, int box_k);

}  // namespace ch10::solution::hopper
