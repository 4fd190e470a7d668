// v9 — depthwise 3 x 3, a block walks down a column tile, its input rows in a shared-memory
// ring that cp.async fills several rows ahead.
//
// What changed from v7: v7 keeps its reads in registers. A thread's 10 centre loads are all the
// bytes its SM has in flight, so the bytes in flight are capped by occupancy (144 registers a
// thread), and every input row still costs 3 loads of 16 bytes (columns w - 1, w, w + 1) whose
// side columns go through L1 a second and third time. The copy runs at about half the copy
// bandwidth whatever v7's block size or strip height.
//   * The loads leave the registers. A block owns (n, a segment of output rows, a tile of tw
//     columns, a slab of 2P channels). Its input rows (the tile plus one column of halo on each
//     side, zero-filled at the image's edges by cp.async's src-size 0) go into a ring of
//     kDepth + 1 shared-memory rows; kDepth rows are issued before the first output, and each
//     output row issues the row kDepth ahead. The bytes in flight no longer depend on how many
//     registers the arithmetic needs: about 6 rows of ~3.8 KB per block, 3 blocks per SM,
//     ~70 KB per SM where Little's law asks ~32 KB (4.3 TB/s x ~1 us / 132 SMs).
//   * Each input byte leaves DRAM for the SM once: the 2 halo columns of a tile are the only
//     bytes read twice (28 + 2 columns for 28 on the 112-wide layer), and the 2 halo rows of a
//     segment (rows + 2 for rows). A block walks down its segment, so the vertical reuse that
//     v7 kept in a strip of 8 spans the whole segment.
//   * A thread owns 2 channels (one bf16x2 word) of kCols = 4 neighbouring outputs along W.
//     It keeps the 3 input rows of its window, 6 columns x 2 channels, widened to FP32 in
//     registers, and per output row reads only the new row: 6 shared loads of 4 bytes and 12
//     conversions for 4 outputs (the window slides down; three register sets rotate, so the
//     loop is unrolled by 3). The 9 taps of its 2 channels are 18 FP32 registers: ~80
//     registers a thread, where v7 needed 144 for 72 taps.
//   * Lanes take channel pairs fastest: a warp's shared loads are consecutive words (no bank
//     conflict at P = 32). With fewer pairs per slab (C = 96: 16, C = 144: 8) one warp holds
//     2 or 4 column groups, and a pixel of padding after every kCols columns moves their words
//     onto different banks.
//   * The slab's pair count P is the largest of 32, 16, 8, 4 that divides C / 2, so no lane
//     idles on a partial slab; the tile width follows (P x groups <= 256 threads, kCols
//     columns a group), spread so that the last tile of a row is as full as the others.
//   * The segment height is picked per shape from the SM count and the kernel's occupancy:
//     the fewest (waves x (rows + 2 + a prologue's worth)), so that the last wave is not
//     mostly empty and the halo rows stay few.
//   * y leaves with 4-byte streaming stores (st.global.cs): a warp writes 128 contiguous bytes.
// The sums are FP32 over the 9 products in filter-row, then column order (as v5 and v7);
// zero-filled padding adds 0 x w. C % 8 != 0 goes to v7 (and from there to v5's scalar path),
// an x not 16-byte aligned to v5.
//
// Run: ctest --preset ch10-solution -R depthwise3x3/bf16/v9
//      build/ch10/bin/ch10_bench --op=depthwise3x3 --impl=v7_depthwise_strip,v9_depthwise_ring,cudnn_grouped
#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

constexpr int kCols = 4;            // outputs per thread along W
constexpr int kDepth = 8;           // input rows issued before the first output row
constexpr int kSlots = kDepth + 1;  // ring rows: row k + kDepth reuses the slot of row k - 1
constexpr int kMaxThreads = 256;    // pairs x groups
static_assert(kDepth >= 3, "the first output row needs 3 input rows");

// One launch's tiling, the same for every block.
struct Tiling {
  int pairs;       // P: channel pairs per slab (32, 16, 8 or 4)
  int groups;      // G: column groups per block; the block has P x G threads
  int tw;          // output columns per tile, G x kCols
  int tiles_w;     // tiles across W
  int slabs;       // C / (2 P)
  int segs;        // segments down H
  int rows;        // output rows per segment (the last one may have fewer)
  int slot_words;  // 32-bit words per ring row: (G (kCols + 1) + 2) pixels x P
};

// Input column ci of the tile (0 .. tw + 1, column w0 - 1 + ci of the image) is stored at pixel
// slot ci + ci / kCols: one empty pixel after every kCols columns (bank spread, see the header).
__host__ __device__ constexpr int pixel_slot(int ci) { return ci + ci / kCols; }

__device__ __forceinline__ float2 widen(uint32_t u) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u));
}

// Row `slot` of the ring, the kCols + 2 input columns of column group g, lane's pair p.
__device__ __forceinline__ void read_window(float2 (&dst)[kCols + 2], const uint32_t* slot, int g, int p, int P) {
  const uint32_t* base = slot + g * (kCols + 1) * P + p;
#pragma unroll
  for (int j = 0; j < kCols + 2; ++j) dst[j] = widen(base[(j + j / kCols) * P]);
}

// acc += the 3 taps of filter row r over input columns j .. j + 2 of one window row.
__device__ __forceinline__ void tap_row(float2& acc, const float2 (&in)[kCols + 2], const float2 (&tap)[9], int r,
                                        int j) {
#pragma unroll
  for (int s = 0; s < 3; ++s) {
    acc.x = fmaf(in[j + s].x, tap[r * 3 + s].x, acc.x);
    acc.y = fmaf(in[j + s].y, tap[r * 3 + s].y, acc.y);
  }
}

// One block per (slab, column tile, segment, image), the slab fastest: the slabs of one pixel
// run side by side and read its bytes together. blockDim.x = P x G; the lane's pair is
// threadIdx.x % P, its column group threadIdx.x / P. C % 8 == 0, x 16-byte aligned.
__global__ void __launch_bounds__(kMaxThreads, 3) ring_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                              bf16* __restrict__ y, int H, int W, int C, Tiling t) {
  extern __shared__ __align__(16) uint32_t ring[];  // [kSlots][slot_words] bf16x2 words
  unsigned b = blockIdx.x;
  const int slab = int(b % unsigned(t.slabs));
  b /= unsigned(t.slabs);
  const int wt = int(b % unsigned(t.tiles_w));
  b /= unsigned(t.tiles_w);
  const int seg = int(b % unsigned(t.segs));
  const int64_t n = b / unsigned(t.segs);

  const int P = t.pairs;
  const int p = int(threadIdx.x) % P, g = int(threadIdx.x) / P;
  const int c0 = slab * 2 * P;  // the slab's first channel
  const int w0 = wt * t.tw;     // the tile's first output column
  const int h0 = seg * t.rows;  // the segment's first output row
  const int rows = min(t.rows, H - h0);
  const int in_rows = rows + 2;  // input rows h0 - 1 .. h0 + rows

  // This thread's copies: a ring row is (tw + 2) pixels x P / 4 chunks of 16 bytes, G P + P / 2
  // chunks for P G threads, so at most 2 each. Their column offsets and validity are fixed.
  const int per_pixel = P / 4;
  const int row_chunks = (t.tw + 2) * per_pixel;
  int64_t src_off[2];
  uint32_t dst_word[2];
  bool col_ok[2], has[2];
#pragma unroll
  for (int m = 0; m < 2; ++m) {
    const int q = int(threadIdx.x) + m * int(blockDim.x);
    has[m] = q < row_chunks;
    const int ci = q / per_pixel, part = q % per_pixel;
    const int v = w0 - 1 + ci;
    col_ok[m] = has[m] && v >= 0 && v < W;
    src_off[m] = int64_t(v) * C + c0 + part * 8;
    dst_word[m] = uint32_t(pixel_slot(ci) * P + part * 4);
  }
  const int64_t image = n * H;  // rows of x before image n
  // Input row k of the block (image row h0 - 1 + k) into its ring slot; one commit group per
  // call, empty past the last row, so that the wait below counts rows.
  auto issue = [&](int k) {
    if (k < in_rows) {
      const int h = h0 - 1 + k;
      const bool row_ok = h >= 0 && h < H;
      uint32_t* slot = ring + (k % kSlots) * t.slot_words;
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        if (!has[m]) continue;
        const bool ok = row_ok && col_ok[m];
        const bf16* src = ok ? x + (image + h) * int64_t(W) * C + src_off[m] : x;
        wb::ptx::cp_async_16(slot + dst_word[m], src, ok);
      }
    }
    wb::ptx::cp_async_commit();
  };

#pragma unroll
  for (int k = 0; k < kDepth; ++k) issue(k);

  // The 9 taps of this lane's 2 channels, FP32: tap[r * 3 + s].
  float2 tap[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) tap[i] = widen(__ldg(reinterpret_cast<const unsigned*>(w + i * C + c0 + 2 * p)));

  const int col0 = w0 + g * kCols;  // this thread's first output column
  // Output row i of the segment from input rows i (top), i + 1 (mid) and i + 2 (bot, read now).
  auto step = [&](int i, float2(&top)[kCols + 2], float2(&mid)[kCols + 2], float2(&bot)[kCols + 2]) {
    // Rows 0 .. i + kDepth - 1 are committed; row i + 2 must have landed.
    wb::ptx::cp_async_wait<kDepth - 3>();
    // Every thread's copies of row i + 2 visible; every thread done with step i - 1, the last
    // reader of the slot that row i + kDepth takes.
    __syncthreads();
    issue(i + kDepth);
    if (i == 0) {
      read_window(top, ring, g, p, P);
      read_window(mid, ring + t.slot_words, g, p, P);
    }
    read_window(bot, ring + ((i + 2) % kSlots) * t.slot_words, g, p, P);
    bf16* out = y + ((image + h0 + i) * W + col0) * int64_t(C) + c0 + 2 * p;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float2 acc = make_float2(0.f, 0.f);
      tap_row(acc, top, tap, 0, j);
      tap_row(acc, mid, tap, 1, j);
      tap_row(acc, bot, tap, 2, j);
      if (col0 + j < W) {
        const __nv_bfloat162 o = __floats2bfloat162_rn(acc.x, acc.y);
        __stcs(reinterpret_cast<unsigned*>(out + int64_t(j) * C), *reinterpret_cast<const unsigned*>(&o));
      }
    }
  };

  float2 ra[kCols + 2], rb[kCols + 2], rc[kCols + 2];
  for (int i = 0; i < rows; i += 3) {
    step(i, ra, rb, rc);
    if (i + 1 < rows) step(i + 1, rb, rc, ra);
    if (i + 2 < rows) step(i + 2, rc, ra, rb);
  }
  // Leave no copy in flight at exit (the empty groups past the last row).
  wb::ptx::cp_async_wait<0>();
}

// The tiling for one shape (C % 8 == 0): the slab, the tile, then the segment height from the
// occupancy of the kernel at that block size.
Tiling pick_tiling(int N, int H, int W, int C) {
  Tiling t{};
  const int half = C / 2;
  t.pairs = half % 32 == 0 ? 32 : half % 16 == 0 ? 16 : half % 8 == 0 ? 8 : 4;
  t.slabs = half / t.pairs;
  const int quads = wb::ceil_div(W, kCols);
  const int max_groups = kMaxThreads / t.pairs;
  t.tiles_w = wb::ceil_div(quads, max_groups);
  t.groups = wb::ceil_div(quads, t.tiles_w);
  t.tw = t.groups * kCols;
  t.slot_words = (pixel_slot(t.tw + 1) + 1) * t.pairs;

  const int threads = t.pairs * t.groups;
  const size_t smem = size_t(kSlots) * t.slot_words * sizeof(uint32_t);
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ring_kernel, threads, smem));
  const int64_t resident = int64_t(std::max(1, sms)) * std::max(1, per_sm);
  const int64_t units = int64_t(N) * t.tiles_w * t.slabs;
  // Time ~ waves x (rows + 2 halo rows + ~4 rows of pipeline fill); segments of 4 to 32 rows.
  int best_segs = 1;
  int64_t best_cost = -1;
  const int lo = std::max(1, wb::ceil_div(H, 32)), hi = std::max(lo, wb::ceil_div(H, 4));
  for (int segs = lo; segs <= hi; ++segs) {
    const int rows = wb::ceil_div(H, segs);
    const int real_segs = wb::ceil_div(H, rows);
    if (real_segs != segs) continue;
    const int64_t cost = wb::ceil_div(units * segs, resident) * (rows + 2 + 4);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_segs = segs;
    }
  }
  t.rows = wb::ceil_div(H, best_segs);
  t.segs = wb::ceil_div(H, t.rows);
  return t;
}

}  // namespace

void v9_depthwise_ring(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
  if (C % 8 != 0) {
    v7_depthwise_strip(x, w, y, N, H, W, C, stream);
    return;
  }
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(w) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(y) % 4 != 0) {
    v5_depthwise(x, w, y, N, H, W, C, stream);
    return;
  }
  const Tiling t = pick_tiling(N, H, W, C);
  const int64_t blocks = int64_t(N) * t.tiles_w * t.slabs * t.segs;
  if (blocks >= (int64_t{1} << 31)) {  // past the grid's x limit: a tensor of ~2^40 elements
    v7_depthwise_strip(x, w, y, N, H, W, C, stream);
    return;
  }
  const size_t smem = size_t(kSlots) * t.slot_words * sizeof(uint32_t);  // < 48 KB: no opt-in
  ring_kernel<<<unsigned(blocks), unsigned(t.pairs * t.groups), smem, stream>>>(x, w, y, H, W, C, t);
  WB_CHECK_LAUNCH();
}

}  // namespace ch10::solution
