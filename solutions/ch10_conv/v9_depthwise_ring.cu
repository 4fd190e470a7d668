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
//     kDepth + 1 = 9 shared-memory rows; 8 rows are issued before the first output, and each
//     output row issues the row 8 ahead. The bytes in flight no longer depend on how many
//     registers the arithmetic needs: about 6 rows of ~7.4 KB per block, 2 blocks per SM on
//     the 64-channel layer, ~90 KB per SM where Little's law asks ~32 KB (4.3 TB/s x ~1 us /
//     132 SMs).
//   * Each input byte leaves DRAM for the SM once: the 2 halo columns of a tile are the only
//     bytes read twice (56 + 2 columns for 56 on the 112-wide layer), and the 2 halo rows of a
//     segment (rows + 2 for rows). A block walks down its segment, so the vertical reuse that
//     v7 kept in a strip of 8 spans the whole segment.
//   * A thread owns 2 channels (one bf16x2 word) of kCols = 8 neighbouring outputs along W.
//     It keeps the 3 input rows of its window, 10 columns x 2 channels, widened to FP32 in
//     registers, and per output row reads only the new row: 10 shared loads of 4 bytes and 20
//     conversions for 8 outputs (the window slides down; three register sets rotate, so the
//     loop is unrolled by 3). The 9 taps of its 2 channels are 18 FP32 registers: ~120
//     registers a thread. 8 outputs a thread (not 4) spread the row's fixed work (the wait,
//     the barrier, the copy, the pointer steps) over twice the outputs.
//   * The loop's integer work is a few additions a row: the pair count is a template
//     parameter (the shared loads' offsets are immediates), and the copies' sources, the ring
//     slots and the output row advance by additions instead of being recomputed.
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
// Measured (H200, one ch10_bench run, measured copy 4,262 GB/s; median us, % of that copy):
// 32 x 112 x 112 x 64: 33.7 (71.6 %), v7 47.2; 32 x 112 x 112 x 96: 55.8 (64.8 %), v7 69.7;
// 32 x 56 x 56 x 144: 28.6 (47.5 %), v7 28.6. Short of the 85 % target. Nsight Compute on
// the first shape: DRAM not saturated, the schedulers issue on ~57 % of cycles with ~3 warps
// each (2 blocks of 7 warps an SM), the top stalls fixed-latency waits and the per-row barrier;
// a ring of 5 or 12 rows instead of 8, or shorter segments, did not help: the SM's issue and
// latency, not DRAM's, are what is left. 4 outputs a thread (3 blocks an SM) measured
// 34.8 / 51.6 / 27.0 us: better on the 96- and 144-channel layers, worse on the 64 one.
//
// Run: ctest --preset ch10-solution -R depthwise3x3/bf16/v9
//      build/ch10/bin/ch10_bench --op=depthwise3x3 --impl=v7_depthwise_strip,v9_depthwise_ring,cudnn_grouped
#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/mma.cuh"
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch10::solution {
namespace {

constexpr int kCols = 8;            // outputs per thread along W
constexpr int kDepth = 8;           // input rows issued before the first output row
constexpr int kSlots = kDepth + 1;  // ring rows: row k + kDepth reuses the slot of row k - 1
constexpr int kMaxThreads = 256;    // pairs x groups
// Copies of 16 bytes per thread per ring row: a row is (kCols G + 2) pixels x kP / 4 chunks for
// kP G threads, so kCols / 4 + 1 / (2 G) each: at most kCols / 4 + 1.
constexpr int kCopies = kCols / 4 + 1;
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

// One ring row of column group g, lane p: the kCols + 2 input columns of its window, widened.
// kP is a compile-time constant, so the offsets are immediates of the shared loads.
template <int kP>
__device__ __forceinline__ void read_window(float2 (&dst)[kCols + 2], const uint32_t* base) {
#pragma unroll
  for (int j = 0; j < kCols + 2; ++j) dst[j] = widen(base[(j + j / kCols) * kP]);
}

// acc[j] += the 3 taps of filter row r over input columns j .. j + 2 of one window row, for
// every j: the tap outer, the column inner (independent sums side by side).
__device__ __forceinline__ void tap_row(float2 (&acc)[kCols], const float2 (&in)[kCols + 2], const float2 (&tap)[9],
                                        int r) {
#pragma unroll
  for (int s = 0; s < 3; ++s) {
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      acc[j].x = fmaf(in[j + s].x, tap[r * 3 + s].x, acc[j].x);
      acc[j].y = fmaf(in[j + s].y, tap[r * 3 + s].y, acc[j].y);
    }
  }
}

// One block per (slab, column tile, segment, image), the slab fastest: the slabs of one pixel
// run side by side and read its bytes together. blockDim.x = kP x G; the lane's pair is
// threadIdx.x % kP, its column group threadIdx.x / kP. C % 8 == 0, x 16-byte aligned.
// Everything that changes from row to row (the copies' sources, the ring slots, the output
// row) advances by an addition: the loop's integer work is a few instructions a row.
template <int kP>
__global__ void __launch_bounds__(kMaxThreads, 2) ring_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                              bf16* __restrict__ y, int H, int W, int C, Tiling t) {
  extern __shared__ __align__(16) uint32_t ring[];  // [kSlots][slot_words] bf16x2 words
  unsigned b = blockIdx.x;
  const int slab = int(b % unsigned(t.slabs));
  b /= unsigned(t.slabs);
  const int wt = int(b % unsigned(t.tiles_w));
  b /= unsigned(t.tiles_w);
  const int seg = int(b % unsigned(t.segs));
  const int64_t n = b / unsigned(t.segs);

  const int p = int(threadIdx.x) % kP, g = int(threadIdx.x) / kP;
  const int c0 = slab * 2 * kP;  // the slab's first channel
  const int w0 = wt * t.tw;      // the tile's first output column
  const int h0 = seg * t.rows;   // the segment's first output row
  const int rows = min(t.rows, H - h0);
  const int in_rows = rows + 2;          // input rows h0 - 1 .. h0 + rows
  const int64_t x_row = int64_t(W) * C;  // elements per image row
  const int64_t image = n * H;           // rows of x before image n

  // This thread's copies (kCopies at most, see above). src: their offsets in x at input row 0 (image
  // row h0 - 1; valid only where the row is), advanced one row per copy.
  constexpr int kPerPixel = kP / 4;
  const int row_chunks = (t.tw + 2) * kPerPixel;
  int64_t src[kCopies];
  uint32_t dst[kCopies];
  bool col_ok[kCopies], has[kCopies];
#pragma unroll
  for (int m = 0; m < kCopies; ++m) {
    const int q = int(threadIdx.x) + m * int(blockDim.x);
    has[m] = q < row_chunks;
    const int ci = q / kPerPixel, part = q % kPerPixel;
    const int v = w0 - 1 + ci;
    col_ok[m] = has[m] && v >= 0 && v < W;
    src[m] = (image + h0 - 1) * x_row + int64_t(v) * C + c0 + part * 8;
    dst[m] = wb::ptx::smem_u32(ring) + uint32_t(pixel_slot(ci) * kP + part * 4) * 4u;
  }
  const uint32_t slot_bytes = uint32_t(t.slot_words) * 4u, ring_bytes = kSlots * slot_bytes;
  int k_next = 0;        // the next input row to copy
  uint32_t wr_slot = 0;  // its slot, in bytes
  auto issue = [&]() {
    if (k_next < in_rows) {
      const int h = h0 - 1 + k_next;
      const bool row_ok = h >= 0 && h < H;
#pragma unroll
      for (int m = 0; m < kCopies; ++m) {
        if (!has[m]) continue;
        const bool ok = row_ok && col_ok[m];
        wb::ptx::cp_async_cg_16(dst[m] + wr_slot, ok ? x + src[m] : x, ok);
      }
    }
    wb::ptx::cp_async_commit();
#pragma unroll
    for (int m = 0; m < kCopies; ++m) src[m] += x_row;
    ++k_next;
    wr_slot = wr_slot + slot_bytes == ring_bytes ? 0u : wr_slot + slot_bytes;
  };

#pragma unroll 1
  for (int k = 0; k < kDepth; ++k) issue();

  // The 9 taps of this lane's 2 channels, FP32: tap[r * 3 + s].
  float2 tap[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) tap[i] = widen(__ldg(reinterpret_cast<const unsigned*>(w + i * C + c0 + 2 * p)));

  const int col0 = w0 + g * kCols;  // this thread's first output column
  bool col_in[kCols];               // output column col0 + j inside the image
  uint32_t col_off[kCols];          // its byte offset from the thread's first output
#pragma unroll
  for (int j = 0; j < kCols; ++j) {
    col_in[j] = col0 + j < W;
    col_off[j] = uint32_t(j) * uint32_t(C) * 2u;
  }
  // The thread's window in a ring row: column group g, pair p.
  const uint32_t* window = ring + g * (kCols + 1) * kP + p;
  uint32_t rd_slot = 0;  // the slot of the next row to read, in words
  const uint32_t slot_words = uint32_t(t.slot_words), ring_words = kSlots * slot_words;
  char* out = reinterpret_cast<char*>(y + ((image + h0) * W + col0) * int64_t(C) + c0 + 2 * p);
  const int64_t out_row = x_row * int64_t(sizeof(bf16));

  // Output row i of the segment from input rows i (top), i + 1 (mid) and i + 2 (bot, read now).
  auto step = [&](bool first, float2(&top)[kCols + 2], float2(&mid)[kCols + 2], float2(&bot)[kCols + 2]) {
    // Rows 0 .. i + kDepth - 1 are committed; row i + 2 must have landed.
    wb::ptx::cp_async_wait<kDepth - 3>();
    // Every thread's copies of row i + 2 visible; every thread done with step i - 1, the last
    // reader of the slot that row i + kDepth takes.
    __syncthreads();
    issue();
    if (first) {
      read_window<kP>(top, window);
      read_window<kP>(mid, window + slot_words);
      rd_slot = 2 * slot_words;
    }
    read_window<kP>(bot, window + rd_slot);
    rd_slot = rd_slot + slot_words == ring_words ? 0u : rd_slot + slot_words;
    // All kCols outputs at once, tap by tap: 2 kCols independent FMA chains, so no FFMA waits on
    // the one before it (one output at a time would be 9 dependent FFMAs in a row).
    float2 acc[kCols];
#pragma unroll
    for (int j = 0; j < kCols; ++j) acc[j] = make_float2(0.f, 0.f);
    tap_row(acc, top, tap, 0);
    tap_row(acc, mid, tap, 1);
    tap_row(acc, bot, tap, 2);
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      if (col_in[j]) {
        const __nv_bfloat162 o = __floats2bfloat162_rn(acc[j].x, acc[j].y);
        __stcs(reinterpret_cast<unsigned*>(out + col_off[j]), *reinterpret_cast<const unsigned*>(&o));
      }
    }
    out += out_row;
  };

  float2 ra[kCols + 2], rb[kCols + 2], rc[kCols + 2];
  step(true, ra, rb, rc);
  if (1 < rows) step(false, rb, rc, ra);
  if (2 < rows) step(false, rc, ra, rb);
  for (int i = 3; i < rows; i += 3) {
    step(false, ra, rb, rc);
    if (i + 1 < rows) step(false, rb, rc, ra);
    if (i + 2 < rows) step(false, rc, ra, rb);
  }
  // Leave no copy in flight at exit (the empty groups past the last row).
  wb::ptx::cp_async_wait<0>();
}

// The pairs of a slab: the largest of 32, 16, 8, 4 that divides C / 2 (C % 8 == 0).
int slab_pairs(int C) {
  const int half = C / 2;
  return half % 32 == 0 ? 32 : half % 16 == 0 ? 16 : half % 8 == 0 ? 8 : 4;
}

// The tiling for one shape (C % 8 == 0): the slab, the tile, then the segment height from the
// occupancy of the kernel at that block size.
Tiling pick_tiling(int N, int H, int W, int C, const void* kernel) {
  Tiling t{};
  t.pairs = slab_pairs(C);
  t.slabs = C / 2 / t.pairs;
  const int runs = wb::ceil_div(W, kCols);
  const int max_groups = kMaxThreads / t.pairs;
  t.tiles_w = wb::ceil_div(runs, max_groups);
  t.groups = wb::ceil_div(runs, t.tiles_w);
  t.tw = t.groups * kCols;
  t.slot_words = (pixel_slot(t.tw + 1) + 1) * t.pairs;

  const int threads = t.pairs * t.groups;
  const size_t smem = size_t(kSlots) * t.slot_words * sizeof(uint32_t);
  // Up to ~85 KB of ring: past the default 48 KB, so the kernel opts in before the query.
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int64_t resident = std::max(1, wb::blocks_per_gpu(kernel, threads, smem));
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

// The kernel for kP pairs a slab; v7 where the grid would pass its x limit (a tensor of ~2^40
// elements).
template <int kP>
void launch(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  const Tiling t = pick_tiling(N, H, W, C, reinterpret_cast<const void*>(&ring_kernel<kP>));
  const int64_t blocks = int64_t(N) * t.tiles_w * t.slabs * t.segs;
  if (blocks >= (int64_t{1} << 31)) {
    v7_depthwise_strip(x, w, y, N, H, W, C, stream);
    return;
  }
  const size_t smem = size_t(kSlots) * t.slot_words * sizeof(uint32_t);  // opted in by pick_tiling
  ring_kernel<kP><<<unsigned(blocks), unsigned(t.pairs * t.groups), smem, stream>>>(x, w, y, H, W, C, t);
  WB_CHECK_LAUNCH();
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
  switch (slab_pairs(C)) {
    case 32:
      launch<32>(x, w, y, N, H, W, C, stream);
      break;
    case 16:
      launch<16>(x, w, y, N, H, W, C, stream);
      break;
    case 8:
      launch<8>(x, w, y, N, H, W, C, stream);
      break;
    default:
      launch<4>(x, w, y, N, H, W, C, stream);
      break;
  }
}

}  // namespace ch10::solution
