// v6's pipelined implicit GEMM in pieces, so that v11 (the same block tiles, the K sum split
// over a thread-block cluster) runs the same code: the block tiles (Tile), the GEMM's sizes
// (Dims), the K loop over a range of steps (k_loop), the accumulators parked in shared memory
// (park_accumulators) and the staged epilogue over a range of tile rows (store_rows).
// v6_implicit_gemm_pipelined.cu explains each piece (why 64-deep steps, the swizzle, the tap
// order, the staged epilogue); v11_implicit_gemm_cluster_splitk.cu what the split adds.
#pragma once
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/vec.cuh"
#include "runtime/device.cuh"
#include "conv_common.cuh"

namespace ch10::solution::pipelined {

using namespace wb::ptx;  // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)

constexpr int BK = 64;             // channels per K step
constexpr int kRowBytes = BK * 2;  // one 128-byte row per pixel (A) or filter (B) of a stage
constexpr int kOutPad = 8;         // floats of padding per row of the staged output tile

// One block tile: BM pixels x BN filters, warps laid out kWarpsM x kWarpsN, kStages stages.
template <int BM_, int BN_, int kWarpsM_, int kWarpsN_, int kStages_, int kMinBlocks_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, kWarpsM = kWarpsM_, kWarpsN = kWarpsN_;
  static constexpr int kStages = kStages_, kMinBlocks = kMinBlocks_;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;            // the warp tile
  static constexpr int MI = WM / 16, NI = WN / 8;                       // mma tiles of 16 x 8 per warp
  static constexpr int kRowStep = kThreads / 8;                         // rows one pass of the block's copies covers
  static constexpr int kARows = BM / kRowStep, kBRows = BN / kRowStep;  // copies per thread
  static constexpr int kAStage = BM * kRowBytes, kBStage = BN * kRowBytes;
  static constexpr int kPipe = kStages * (kAStage + kBStage);
  static constexpr int kOut = BM * (BN + kOutPad) * 4;  // the FP32 output tile
  static constexpr int kSmem = kPipe > kOut ? kPipe : kOut;
  static_assert(BM % kRowStep == 0 && BN % kRowStep == 0, "whole passes of copies over both tiles");
  static_assert(kRowStep % 8 == 0, "a thread's copy rows are the same modulo 8 (one swizzle XOR)");
  static_assert(WM % 16 == 0 && WN % 16 == 0, "B fragments come in pairs of n8 tiles (one ldmatrix.x4)");
  static_assert(kThreads >= BN, "one thread folds the BN parameters of one channel");
  static_assert(kThreads % (BN / 8) == 0 && 32 % (BN / 8) == 0, "the epilogue's rows split evenly over warps");
  static_assert(kStages >= 2, "a stage in flight while another is read");
};

using Tile128x128 = Tile<128, 128, 2, 4, 3, 2>;
using Tile128x64 = Tile<128, 64, 2, 2, 3, 3>;
using Tile64x128 = Tile<64, 128, 1, 4, 3, 3>;
using Tile64x64 = Tile<64, 64, 2, 2, 4, 3>;

struct Dims {
  ConvShape s;
  int P, Q, M;
  int steps;  // ceil(C / BK) chunks x R x S taps
};

// The GEMM's sizes of s (steps: ceil(C / BK) chunks x R x S taps).
inline Dims make_dims(const ConvShape& s) {
  Dims d{s, s.P(), s.Q(), 0, 0};
  d.M = s.N * d.P * d.Q;
  d.steps = wb::ceil_div(s.C, BK) * s.R * s.S;
  return d;
}

// The GPU's SM count and how much shared memory a block may opt into, once per process.
struct Gpu {
  int sms, smem_optin, major;
};
inline const Gpu& gpu() {
  static const Gpu g = [] {
    const wb::DeviceInfo info = wb::query_device();
    return Gpu{info.sms, info.smem_per_block_optin, info.major};
  }();
  return g;
}

// Whether the pipelined kernels take the shape: 16-byte pieces of x and w (C % 8 == 0, both
// aligned) and the largest tile's 96 KB (plus the static BN table) within the GPU's opt-in
// limit (every GPU since sm_80; sm_86 and sm_89's 99 KB only just). v6 hands the rest to v4.
inline bool takes(const ConvShape& s, const bf16* x, const bf16* w) {
  const bool fits = gpu().smem_optin >= Tile128x128::kSmem + int(sizeof(Folded)) * Tile128x128::BN;
  return s.C % 8 == 0 && wb::aligned16(x) && wb::aligned16(w) && fits;
}

// y (and the residual) in 16-byte stores: K % 8 == 0, both 16-byte aligned.
inline bool vector_out(const ConvShape& s, const bf16* residual, const bf16* y) {
  return s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));
}

// How a block that walks several tiles in a row (v11's persistent form) runs the K loop of
// one: one stream of copies through the stages from tile to tile.
struct Streamed {
  int stage0;     // the stage the tile's step 0 occupies (the steps before it, modulo kStages)
  bool primed;    // its first kStages - 1 steps are in flight already (the tile before issued them)
  bool has_next;  // a next tile follows, at (next_m0, next_k0): its first steps are issued here
  int next_m0, next_k0;
};

// The block's K loop over steps t0 .. t1 - 1 (step = (chunk of 64 channels, r, s), s fastest)
// of the tile whose first pixel is m0 and first filter k0, through kStages cp.async stages at
// sA (A tiles) and sB (B tiles); the sums land in acc (zeroed here). On return every copy has
// landed and every warp is done reading the stages (they may be written).
// kStream (v11's persistent form; t0 = 0, at least kStages steps): the tile's steps are part
// of one stream (`stream`): its first steps may be in flight already, the next tile's first
// kStages - 1 steps are issued during its last ones, and on return those may still be in
// flight (the stages are not free: the caller's epilogue stages its tile elsewhere).
template <class T, bool kStream = false>
__device__ __forceinline__ void k_loop(const bf16* __restrict__ x, const bf16* __restrict__ w, const Dims& d, int m0,
                                       int k0, int t0, int t1, uint32_t sA, uint32_t sB, float (&acc)[T::MI][T::NI][4],
                                       const Streamed& stream = {}) {
  const ConvShape& s = d.s;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / T::kWarpsN, wn = warp % T::kWarpsN;

  // --- copies: thread tid owns the 16-byte piece `piece` (channels c0 + 8 piece ..) of rows
  // row0 + i kRowStep of both tiles; rows that far apart are equal modulo 8, so every copy of
  // the thread lands at the same swizzled column.
  const int piece = tid % 8, row0 = tid / 8;
  const uint32_t dst = row0 * kRowBytes + ((piece ^ (row0 % 8)) << 4);  // + i kRowStep rows
  int a_h0[T::kARows], a_w0[T::kARows];
  int64_t a_base[T::kARows];     // x offset of the pixel's tap (0, 0) at channel 8 piece
  const bf16* b_src[T::kBRows];  // filter row's channel 8 piece of tap (0, 0)
  unsigned b_in;                 // bit i: filter row i is < K
  int lr, ls, lc;                // the next step to load: tap (lr, ls) of the channel chunk from lc
  // The copies' rows for the tile at (tile_m0, tile_k0), step `first` the next to load.
  auto start_copies = [&](int tile_m0, int tile_k0, int first) {
#pragma unroll
    for (int i = 0; i < T::kARows; ++i) {
      im2col_row(s, d.P, d.Q, d.M, tile_m0 + row0 + i * T::kRowStep, piece * 8, a_h0[i], a_w0[i], a_base[i]);
    }
    const int64_t kg = int64_t(s.R) * s.S * s.C;  // a filter's length, R S C
    b_in = 0;
#pragma unroll
    for (int i = 0; i < T::kBRows; ++i) {
      const int k = tile_k0 + row0 + i * T::kRowStep;
      b_in |= unsigned(k < s.K) << i;
      b_src[i] = w + (k < s.K ? int64_t(k) * kg + piece * 8 : 0);
    }
    const int rs = s.R * s.S;
    lr = first % rs / s.S, ls = first % s.S, lc = first / rs * BK;
  };
  if constexpr (kStream) {
    start_copies(m0, k0, stream.primed ? T::kStages - 1 : 0);  // the next step this block loads
  } else {
    start_copies(m0, k0, t0);
  }
  auto load_stage = [&](int stage) {
    const bool c_ok = lc + piece * 8 < s.C;  // C % 8 == 0: the piece's 8 channels are all in or all out
    const int64_t a_tap = (int64_t(lr) * s.W + ls) * s.C + lc;
    const int64_t b_tap = (int64_t(lr) * s.S + ls) * s.C + lc;
    const uint32_t da = sA + stage * T::kAStage + dst, db = sB + stage * T::kBStage + dst;
#pragma unroll
    for (int i = 0; i < T::kARows; ++i) {
      const bool ok = c_ok && unsigned(a_h0[i] + lr) < unsigned(s.H) && unsigned(a_w0[i] + ls) < unsigned(s.W);
      cp_async_ca_16(da + i * T::kRowStep * kRowBytes, ok ? x + a_base[i] + a_tap : x, ok);
    }
#pragma unroll
    for (int i = 0; i < T::kBRows; ++i) {
      const bool ok = c_ok && ((b_in >> i) & 1u);
      cp_async_cg_16(db + i * T::kRowStep * kRowBytes, ok ? b_src[i] + b_tap : w, ok);
    }
    if (++ls == s.S) {  // the next tap; past the last one, the next chunk of channels
      ls = 0;
      if (++lr == s.R) {
        lr = 0;
        lc += BK;
      }
    }
  };

  // --- fragments: lane l reads row l % 16 of a 16-row group of A at piece 2 kk + l / 16, and
  // row (l % 8) + 8 (l / 16) of a 16-row group of B at piece 2 kk + (l / 8) % 2. Those rows are
  // l % 8 modulo 8, so the stored piece is 2 kk ^ xa (A) or 2 kk ^ xb (B).
  const int xa = (lane / 16) ^ (lane % 8), xb = ((lane / 8) % 2) ^ (lane % 8);
  const uint32_t a_ld = (wm * T::WM + lane % 16) * kRowBytes;
  const uint32_t b_ld = (wn * T::WN + lane % 8 + (lane / 16) * 8) * kRowBytes;

  zero_accumulators(acc);

  // Stages 0 .. kStages - 2 take steps 0 .. kStages - 2 of the range (one commit group each,
  // empty past its end).
  const int steps = t1 - t0;
  int rd = 0, wr = T::kStages - 1;  // the stage step t reads; the stage step t + kStages - 1 fills
  if constexpr (kStream) {
    rd = stream.stage0;
    wr = (stream.stage0 + T::kStages - 1) % T::kStages;
    if (!stream.primed) {
#pragma unroll
      for (int st = 0; st < T::kStages - 1; ++st) {
        load_stage((stream.stage0 + st) % T::kStages);
        cp_async_commit();
      }
    }
  } else {
#pragma unroll
    for (int st = 0; st < T::kStages - 1; ++st) {
      if (st < steps) load_stage(st);
      cp_async_commit();
    }
  }
  for (int t = 0; t < steps; ++t) {
    // Groups committed: kStages - 1 + t. Step t's (group t) must be in: kStages - 2 may fly.
    cp_async_wait<T::kStages - 2>();
    __syncthreads();  // every thread's copies of step t have landed; every warp is done with step t - 1
    if constexpr (kStream) {
      if (t + T::kStages - 1 < steps) {
        load_stage(wr);
      } else if (stream.has_next) {  // the next tile's steps 0 .. kStages - 2
        if (t + T::kStages - 1 == steps) start_copies(stream.next_m0, stream.next_k0, 0);
        load_stage(wr);
      }
    } else {
      if (t + T::kStages - 1 < steps) load_stage(wr);  // into the stage step t - 1 read
    }
    cp_async_commit();
    wr = wr + 1 == T::kStages ? 0 : wr + 1;
    const uint32_t a_st = sA + rd * T::kAStage + a_ld, b_st = sB + rd * T::kBStage + b_ld;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const uint32_t ao = uint32_t(((2 * kk) ^ xa) << 4), bo = uint32_t(((2 * kk) ^ xb) << 4);
      // B's four matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
      uint32_t a[T::MI][4], b[T::NI / 2][4];
#pragma unroll
      for (int i = 0; i < T::MI; ++i) ldmatrix_x4(a[i], a_st + i * 16 * kRowBytes + ao);
#pragma unroll
      for (int j = 0; j < T::NI / 2; ++j) ldmatrix_x4(b[j], b_st + j * 16 * kRowBytes + bo);
#pragma unroll
      for (int i = 0; i < T::MI; ++i) {
#pragma unroll
        for (int j = 0; j < T::NI / 2; ++j) {
          mma_16816<bf16>(acc[i][2 * j], a[i], b[j][0], b[j][1]);
          mma_16816<bf16>(acc[i][2 * j + 1], a[i], b[j][2], b[j][3]);
        }
      }
    }
    rd = rd + 1 == T::kStages ? 0 : rd + 1;
  }
  if constexpr (!kStream) {
    cp_async_wait<0>();  // only empty groups remain, but nothing may land in the buffers below
    __syncthreads();     // every warp is done reading the stages
  }
}

// The row stride (floats) of the staged FP32 output tile.
template <class T>
constexpr int kOutLd = T::BN + kOutPad;

// The accumulators into the BM x (BN + 8) FP32 tile at `out`. Lane (g, q) holds rows g and
// g + 8, channels 2q, 2q + 1 of each 16 x 8 tile; the 8 floats of padding put the 4 rows a
// half-warp writes 8 banks apart. The caller's barrier makes the tile visible.
template <class T>
__device__ __forceinline__ void park_accumulators(const float (&acc)[T::MI][T::NI][4], float* out) {
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / T::kWarpsN, wn = warp % T::kWarpsN;
  constexpr int kLd = kOutLd<T>;
  const int g = lane / 4, q4 = lane % 4;
#pragma unroll
  for (int i = 0; i < T::MI; ++i) {
    const int r = wm * T::WM + i * 16 + g;
#pragma unroll
    for (int j = 0; j < T::NI; ++j) {
      const int c = wn * T::WN + j * 8 + 2 * q4;
      *reinterpret_cast<float2*>(out + r * kLd + c) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(out + (r + 8) * kLd + c) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
  }
}

// Tile rows lo, lo + kRowsPerPass, ... below hi through the fused epilogue: thread tid takes
// channels 8 c8 .. 8 c8 + 7 of its rows; read(r, c8, v) fills v with their 8 complete FP32 sums
// (row r of the tile), sF holds the tile's folded BN parameters. Rows past M and channels
// past K are skipped.
template <class T, class Read>
__device__ __forceinline__ void store_rows(int lo, int hi, int m0, int k0, const Dims& d, const Folded* sF,
                                           const bf16* __restrict__ residual, bf16* __restrict__ y, bool vec_out,
                                           Read read) {
  constexpr int kPerRow = T::BN / 8, kRowsPerPass = T::kThreads / kPerRow;
  const int tid = threadIdx.x, c8 = tid % kPerRow, r0 = tid / kPerRow;
  const int kc = k0 + c8 * 8;  // the first of the thread's 8 channels
  if (kc >= d.s.K) return;
#pragma unroll 2
  for (int r = lo + r0; r < hi; r += kRowsPerPass) {
    const int m = m0 + r;
    if (m >= d.M) break;
    float v[8];
    read(r, c8, v);
    epilogue_store8(v, &sF[c8 * 8], residual, y, int64_t(m) * d.s.K + kc, kc, d.s.K, vec_out);
  }
}

// The 8 floats of row r, channels 8 c8 .. 8 c8 + 7 of the block's own staged tile at `out`.
// Lanes 4-7 of each group of 8 read their two float4 halves in the other order: the 8 lanes
// of a quarter-warp cover all 32 banks once.
template <class T>
__device__ __forceinline__ void read_staged(const float* out, int r, int c8, float (&v)[8]) {
  const int tid = threadIdx.x, lane = tid % 32, half = (lane / 4) % 2;
  const float4* src = reinterpret_cast<const float4*>(out + r * kOutLd<T> + c8 * 8);
  const float4 first = src[half], second = src[half ^ 1];
  const float4 lo = half ? second : first, hi = half ? first : second;
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}

// The grid of a kernel over the tiles of T: (ceil(M / BM) x parts, ceil(K / BN)) blocks.
template <class T>
dim3 tile_grid(const Dims& d, int parts) {
  return dim3(unsigned(wb::ceil_div(d.M, T::BM) * parts), unsigned(wb::ceil_div(d.s.K, T::BN)));
}

}  // namespace ch10::solution::pipelined
