// v6 — v4's implicit GEMM with the block tile picked per shape, a 3-4 stage pipeline of 64-deep
// steps, and the epilogue staged in shared memory so that y leaves in 16-byte stores.
//
// What changed from v4 (same instructions: cp.async, ldmatrix.x4, mma.sync m16n8k16):
//   * the tile is a template (Tile below) and the launcher picks one of four per shape:
//       (128, 128)  8 warps of (64, 32), 3 stages   96 KB   large M and K
//       (128,  64)  4 warps of (64, 32), 3 stages   72 KB   K <= 64, mid-size layers
//       ( 64, 128)  4 warps of (64, 32), 3 stages   72 KB
//       ( 64,  64)  4 warps of (32, 32), 4 stages   64 KB   small M (14 x 14 and 7 x 7 maps)
//     v4's fixed (128, 128) tile wastes half of every MMA when K = 64 (the 56 x 56 layer), and
//     gives 49-98 blocks to a 132-SM GPU on the 14 x 14 and 7 x 7 layers (M = 6,272 or 1,568
//     pixels at batch 32): most SMs idle. The launcher counts the blocks each tile gives, and
//     takes the tile whose busiest SM has the fewest MACs to do: ceil(blocks / SMs) x BM x BN
//     (a tie goes to the tile listed first, the larger: fewer bytes per MAC). Batch 32, 132 SMs:
//       56 x 56, 64 -> 64      M 100,352  (128, 64)   784 blocks, 6 per SM, no wasted columns
//       28 x 28, 128 -> 128    M  25,088  (128, 64)   392 blocks, 2.97 per SM (v4: 196, 1.48)
//       14 x 14, 256 -> 256    M   6,272  ( 64, 64)   392 blocks, 2.97 per SM (v4: 98)
//       7 x 7, 512 -> 512      M   1,568  (128, 64)   104 blocks (v4: 52)
//       1 x 1, 512 -> 128      M  25,088  (128, 64)   392 blocks
//       3 x 3 stride 2, 256    M   6,272  ( 64, 64)   392 blocks
//     No split-K: the op's launcher has no workspace for FP32 partial sums, and the first
//     call runs under stream capture, where an allocation is refused.
//   * 64 channels per K step (v4: 32), 3 or 4 stages in dynamic shared memory: half the
//     barriers per MAC, and 2-3 steps of copies in flight instead of one. A tile row is 128
//     bytes (8 pieces of 16 bytes); piece p of row r is stored at p ^ (r % 8), so the 8 rows
//     one ldmatrix phase reads hit 8 different groups of 4 banks (conflict-free, no padding).
//   * the K loop walks channel chunks outside and taps inside: step = (chunk of 64 channels,
//     r, s), s fastest. The copies of tap (r, s + 1) read nearly the same pixels of x as those
//     of tap (r, s), one pixel over, one step later; A's copies go through L1 (cp.async.ca),
//     so most of those bytes come from L1 instead of L2 (v4's Kg order put the C / 32 steps of
//     a whole tap between two neighbouring taps). B (the weights) is read once per block:
//     cp.async.cg, L2 only. The sum runs in a different order than v4's; the same FP32 terms.
//   * no division in the K loop: the tap (r, s) and the chunk c0 step forward by additions;
//     each thread's pixel rows are split into (n, h0, w0) once, before the loop (as v4), and
//     a row past M gets h0 = -2^30, which fails the bounds test of every tap.
//   * the epilogue goes through shared memory: the warps park their FP32 accumulators in the
//     idle pipeline buffers, then each thread takes 8 neighbouring channels of one pixel:
//     one 16-byte load of the residual, 8 epilogues in FP32, one 16-byte store of y (v4: one
//     4-byte store per pair). Whole 32-byte sectors, a quarter of the store instructions.
// C % 8 != 0 (no 16-byte copy lines up): v4 runs the shape, through its element-by-element
// path. K % 8 != 0 or y / residual not 16-byte aligned: the same kernel, the epilogue stores
// element by element.
// Offsets into x, w, y and the residual are 64-bit: N H W C passes 2^31 in the large cases.
// Expected: the MMAs busy on every layer (the SM count is the divisor, not the tile), fewer
// L2 bytes for A on the 3 x 3 layers; the measured change comes from the benchmark run
// (docs/ch10-conv.md).
//
// Run: ctest --preset ch10-solution -R conv2d_bn_relu/bf16/v6
//      build/ch10/bin/ch10_bench --benchmark_filter=conv2d_bn_relu
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/mma.cuh"
#include "device/vec.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "conv_common.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

using namespace wb::ptx;  // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)

constexpr int BK = 64;                // channels per K step
constexpr int kRowBytes = BK * 2;     // one 128-byte row per pixel (A) or filter (B) of a stage
constexpr int kOutPad = 8;            // floats of padding per row of the staged output tile
constexpr int kOutside = -(1 << 30);  // h0 of a pixel row past M: every tap falls outside

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

// grid (ceil(M / BM), ceil(K / BN)), block (kThreads), kSmem bytes of dynamic shared memory.
// C % 8 == 0, x and w 16-byte aligned. vec_out: K % 8 == 0, y and residual 16-byte aligned.
template <class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    conv_pipelined_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                          const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, bool vec_out) {
  extern __shared__ __align__(128) unsigned char smem[];  // kStages x A tiles, then kStages x B tiles
  __shared__ Folded sF[T::BN];
  const uint32_t sA = smem_u32(smem), sB = sA + T::kStages * T::kAStage;

  const ConvShape& s = d.s;
  const int m0 = blockIdx.x * T::BM, k0 = blockIdx.y * T::BN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / T::kWarpsN, wn = warp % T::kWarpsN;
  if (tid < T::BN && k0 + tid < s.K) sF[tid] = fold_bn(bn, k0 + tid);  // read after the loop's barriers

  // --- copies: thread tid owns the 16-byte piece `piece` (channels c0 + 8 piece ..) of rows
  // row0 + i kRowStep of both tiles; rows that far apart are equal modulo 8, so every copy of
  // the thread lands at the same swizzled column.
  const int piece = tid % 8, row0 = tid / 8;
  const uint32_t dst = row0 * kRowBytes + ((piece ^ (row0 % 8)) << 4);  // + i kRowStep rows
  int a_h0[T::kARows], a_w0[T::kARows];
  int64_t a_base[T::kARows];  // x offset of the pixel's tap (0, 0) at channel 8 piece
#pragma unroll
  for (int i = 0; i < T::kARows; ++i) {
    const int m = m0 + row0 + i * T::kRowStep;
    a_h0[i] = kOutside;
    a_w0[i] = 0;
    a_base[i] = 0;
    if (m < d.M) {
      const int q = m % d.Q, pq = m / d.Q, p = pq % d.P, n = pq / d.P;
      a_h0[i] = p * s.stride - s.pad;
      a_w0[i] = q * s.stride - s.pad;
      a_base[i] = ((int64_t(n) * s.H + a_h0[i]) * s.W + a_w0[i]) * s.C + piece * 8;
    }
  }
  const int64_t kg = int64_t(s.R) * s.S * s.C;  // a filter's length, R S C
  const bf16* b_src[T::kBRows];                 // filter row's channel 8 piece of tap (0, 0)
  unsigned b_in = 0;                            // bit i: filter row i is < K
#pragma unroll
  for (int i = 0; i < T::kBRows; ++i) {
    const int k = k0 + row0 + i * T::kRowStep;
    b_in |= unsigned(k < s.K) << i;
    b_src[i] = w + (k < s.K ? int64_t(k) * kg + piece * 8 : 0);
  }

  // The next step to load: tap (lr, ls) of the channel chunk starting at lc.
  int lr = 0, ls = 0, lc = 0;
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

  float acc[T::MI][T::NI][4];
#pragma unroll
  for (int i = 0; i < T::MI; ++i) {
#pragma unroll
    for (int j = 0; j < T::NI; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    }
  }

  // Stages 0 .. kStages - 2 take steps 0 .. kStages - 2 (one commit group each, empty past the end).
#pragma unroll
  for (int st = 0; st < T::kStages - 1; ++st) {
    if (st < d.steps) load_stage(st);
    cp_async_commit();
  }
  int rd = 0, wr = T::kStages - 1;  // the stage step t reads; the stage step t + kStages - 1 fills
  for (int t = 0; t < d.steps; ++t) {
    // Groups committed: kStages - 1 + t. Step t's (group t) must be in: kStages - 2 may fly.
    cp_async_wait<T::kStages - 2>();
    __syncthreads();  // every thread's copies of step t have landed; every warp is done with step t - 1
    if (t + T::kStages - 1 < d.steps) load_stage(wr);  // into the stage step t - 1 read
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
  cp_async_wait<0>();  // only empty groups remain, but nothing may land in the buffers below
  __syncthreads();     // every warp is done reading the stages

  // --- epilogue, 1: the accumulators into a BM x (BN + 8) FP32 tile. Lane (g, q) holds rows g
  // and g + 8, channels 2q, 2q + 1 of each 16 x 8 tile; the 8 floats of padding put the 4 rows
  // a half-warp writes 8 banks apart.
  constexpr int kLd = T::BN + kOutPad;
  float* out = reinterpret_cast<float*>(smem);
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
  __syncthreads();

  // --- epilogue, 2: thread tid takes channels 8 c8 .. 8 c8 + 7 of tile rows r0, r0 + kRowsPerPass,
  // ... Lanes 4-7 of each group of 8 read their two float4 halves in the other order: the 8
  // lanes of a quarter-warp cover all 32 banks once.
  constexpr int kPerRow = T::BN / 8, kRowsPerPass = T::kThreads / kPerRow;
  const int c8 = tid % kPerRow, r0 = tid / kPerRow, half = (lane / 4) % 2;
  const int kc = k0 + c8 * 8;  // the first of the thread's 8 channels
  if (kc >= s.K) return;
#pragma unroll 2
  for (int r = r0; r < T::BM; r += kRowsPerPass) {
    const int m = m0 + r;
    if (m >= d.M) break;
    const float4* src = reinterpret_cast<const float4*>(out + r * kLd + c8 * 8);
    const float4 first = src[half], second = src[half ^ 1];
    const float4 lo = half ? second : first, hi = half ? first : second;
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    epilogue_store8(v, &sF[c8 * 8], residual, y, int64_t(m) * s.K + kc, kc, s.K, vec_out);
  }
}

// The GPU's SM count and how much shared memory a block may opt into, once per process.
struct Gpu {
  int sms, smem_optin;
};
const Gpu& gpu() {
  static const Gpu g = [] {
    const wb::DeviceInfo info = wb::query_device();
    return Gpu{info.sms, info.smem_per_block_optin};
  }();
  return g;
}

template <class T>
void launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d, bool vec_out,
            cudaStream_t stream) {
  auto* kernel = &conv_pipelined_kernel<T>;
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kernel, T::kSmem);  // once per tile
  const dim3 grid(unsigned(wb::ceil_div(d.M, T::BM)), unsigned(wb::ceil_div(d.s.K, T::BN)));
  kernel<<<grid, T::kThreads, T::kSmem, stream>>>(x, w, bn, residual, y, d, vec_out);
  WB_CHECK_LAUNCH();
}

}  // namespace

void v6_implicit_gemm_pipelined(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                                cudaStream_t stream) {
  require_valid(s);
  // The largest tile's 96 KB (plus the static BN table) fit every GPU since sm_80, sm_86 and
  // sm_89's 99 KB only just; below that, or without 16-byte pieces of x and w, v4 runs it.
  const bool fits = gpu().smem_optin >= Tile128x128::kSmem + int(sizeof(Folded)) * Tile128x128::BN;
  if (s.C % 8 != 0 || !wb::aligned16(x) || !wb::aligned16(w) || !fits) {
    v4_implicit_gemm_mma(x, w, bn, residual, y, s, stream);
    return;
  }
  Dims d{s, s.P(), s.Q(), 0, 0};
  d.M = s.N * d.P * d.Q;
  d.steps = wb::ceil_div(s.C, BK) * s.R * s.S;
  const bool vec_out = s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));

  // The tile whose busiest SM does the least; on a tie the one listed first (larger tiles
  // first: fewer bytes from L2 per MAC).
  switch (pick_tile<Tile128x128, Tile128x64, Tile64x128, Tile64x64>(d.M, s.K, gpu().sms)) {
    case 0:
      launch<Tile128x128>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 1:
      launch<Tile128x64>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 2:
      launch<Tile64x128>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    default:
      launch<Tile64x64>(x, w, bn, residual, y, d, vec_out, stream);
      break;
  }
}

}  // namespace ch10::solution
