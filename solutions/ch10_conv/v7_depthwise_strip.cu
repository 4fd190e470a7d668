// v7 — depthwise 3 x 3, a strip of 8 outputs down a column per thread, the window in registers.
//
// What changed from v5: v5 moves DRAM's bytes once, but every output pays 9 loads of x, 9 of w
// and 9 x 8 BF16 -> FP32 conversions of each, plus a 64-bit division chain for its indices:
// it runs out of load and integer issue slots, and the 3 rows of each tap meet only in L2
// (the rows above and below belong to other blocks), before DRAM is busy.
//   * One thread owns 8 channels of kRows = 8 outputs stacked along H at one (n, w). It walks
//     the kRows + 2 input rows of its strip once: each input row is 3 loads (columns w - 1, w,
//     w + 1), widened to FP32 once and used by the up to 3 outputs it feeds (filter rows 2, 1
//     and 0). 3.75 loads of x per output instead of 9, and 30 + 9 conversions instead of 144.
//   * Why a strip along H and not along W: consecutive threads take consecutive channel groups,
//     then consecutive w, so the left and right columns one thread loads are the centre
//     columns of its neighbours in the same warp: that reuse is (mostly) an L1 hit. The vertical reuse
//     is the one that would cross blocks, so that is the one kept in registers; L2 sees about
//     (kRows + 2) / kRows of x instead of 3 times it.
//   * The 9 taps of the thread's 8 channels are loaded and widened once, kept as 72 FP32
//     registers: 72 FFMAs per output and no conversion of w in the loop (a conversion is an
//     integer instruction; 72 more per output would cost as much issue as the FFMAs).
//   * Bytes in flight: a thread first issues the loads of the centre column of all its
//     kRows + 2 input rows (10 x 16 B), the only loads that bring new lines; the side columns
//     are the centre columns of its neighbours in the warp, already requested, and are loaded
//     row by row as the strip is computed (L1 hits). At 144 registers (72 of them the taps,
//     40 the centre column) an SM holds 14 warps in 64-thread blocks (12 in 128-thread ones),
//     448 threads: about 70 KB of x in flight, more than Little's law asks for the read half
//     of the copy (~2 TB/s x ~700 ns / 132 SMs, about 11 KB per SM) with room for the warps
//     that are between strips.
//   * y leaves with streaming stores (st.global.cs): it is never read again here, so its lines
//     should not push out the halo rows of x that the next strip reads from L2.
//   * 32-bit index arithmetic: one division chain per thread (not per output) over
//     N x ceil(H / 8) x W x C / 8 threads; the offsets into x and y stay 64-bit.
// The sums run in v5's order (filter row, then column), so they round as v5's do; a tap outside
// the image adds 0 x w, which changes no value. C % 8 != 0 (no 16-byte vectors) goes to v5's
// scalar path. From conv_common.cuh: widen8 (8 BF16 to FP32), which epilogue_store8 also uses.
//
// Run: ctest --preset ch10-solution -R depthwise3x3/bf16/v7
//      build/ch10/bin/ch10_bench --op=depthwise3x3 --impl=v5_depthwise,v7_depthwise_strip,cudnn_grouped
#include <cstdint>

#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "conv_common.cuh"  // widen8
#include "ladder.cuh"

namespace ch10::solution {
namespace {

constexpr int kThreads = 64;
constexpr int kRows = 8;  // outputs per thread, down one column

// A 16-byte load of x through the read-only path, or zeros for a tap in the padding.
__device__ __forceinline__ uint4 load_or_zero(const bf16* x, int64_t at, bool valid) {
  return valid ? __ldg(reinterpret_cast<const uint4*>(x + at)) : make_uint4(0, 0, 0, 0);
}

// One thread per (n, strip of kRows rows, w, group of 8 channels), the group fastest.
// C % 8 == 0; total = N x strips x W x groups < 2^31.
__global__ void __launch_bounds__(kThreads)
    strip_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y, int H, int W, int C,
                 unsigned groups, unsigned strips, unsigned total) {
  const unsigned i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= total) return;
  const int c0 = int(i % groups) * 8;
  unsigned rest = i / groups;
  const int v = int(rest % unsigned(W));
  rest /= unsigned(W);
  const int h0 = int(rest % strips) * kRows;
  const int64_t n = rest / strips;

  float taps[9][8];
#pragma unroll
  for (int t = 0; t < 9; ++t) widen8(taps[t], __ldg(reinterpret_cast<const uint4*>(w + t * C + c0)));

  const bool left = v > 0, right = v + 1 < W;
  const int64_t row = int64_t(W) * C;
  // Offset of (n, h0 - 1, v, c0): input row k of the strip is base + k row. Negative when
  // h0 = 0; that row is never read.
  const int64_t base = ((n * H + h0 - 1) * W + v) * C + c0;
  // The strip's new bytes first, all in flight at once (see the header).
  uint4 mid[kRows + 2];
#pragma unroll
  for (int k = 0; k < kRows + 2; ++k) {
    const int h = h0 - 1 + k;
    mid[k] = load_or_zero(x, base + k * row, h >= 0 && h < H);
  }
  float acc[kRows][8] = {};
#pragma unroll
  for (int k = 0; k < kRows + 2; ++k) {
    const int h = h0 - 1 + k;
    const bool in = h >= 0 && h < H;
    const int64_t at = base + k * row;
    const uint4 xs[3] = {load_or_zero(x, at - C, in && left), mid[k], load_or_zero(x, at + C, in && right)};
    // Input row h feeds output row h0 + o through filter row k - o, for o = k - 2 .. k.
#pragma unroll
    for (int s = 0; s < 3; ++s) {
      float xf[8];
      widen8(xf, xs[s]);
#pragma unroll
      for (int r = 0; r < 3; ++r) {
        const int o = k - r;
        if (o < 0 || o >= kRows) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[o][j] = fmaf(xf[j], taps[r * 3 + s][j], acc[o][j]);
      }
    }
    // Output row h0 + k - 2 has all 9 taps now. Past H (the last strip of an H that is not a
    // multiple of kRows) the store is skipped, not the loop left: a branch out of the unrolled
    // loop would stop the compiler from issuing later rows' loads early.
    const int o = k - 2;
    if (o < 0) continue;
    uint4 out;
    auto* op = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
    for (int j = 0; j < 4; ++j) op[j] = __floats2bfloat162_rn(acc[o][2 * j], acc[o][2 * j + 1]);
    if (h0 + o < H) __stcs(reinterpret_cast<uint4*>(y + base + (o + 1) * row), out);
  }
}

}  // namespace

void v7_depthwise_strip(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
  const int groups = C / 8;
  const int strips = wb::ceil_div(H, kRows);
  const int64_t total = int64_t(N) * strips * W * groups;
  // v5 keeps C % 8 != 0 (scalar loads) and a thread count past 2^31, which would need a tensor
  // of 2^37 elements, more than a GPU holds today; it keeps the kernel's index 32-bit.
  if (C % 8 != 0 || total >= (int64_t{1} << 31)) {
    v5_depthwise(x, w, y, N, H, W, C, stream);
    return;
  }
  const unsigned blocks = unsigned(wb::ceil_div(total, int64_t{kThreads}));
  strip_kernel<<<blocks, kThreads, 0, stream>>>(x, w, y, H, W, C, unsigned(groups), unsigned(strips), unsigned(total));
  WB_CHECK_LAUNCH();
}

}  // namespace ch10::solution
