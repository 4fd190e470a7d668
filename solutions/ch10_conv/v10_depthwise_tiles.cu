// v10 — depthwise 3 x 3, persistent blocks over 2-D tiles: a whole (16 x 16 outputs + halo)
// tile lands in shared memory while the previous one is computed, one barrier per tile.
//
// What changed from v9: v9 keeps DRAM fed but its SM does not keep up. Nsight Compute on the
// 64-channel layer: the schedulers issue on ~57 % of cycles, ~3 eligible warps each, the top
// stalls a fixed-latency wait and the one barrier per input row; 33.7 us is about 22 thread
// instructions per output at that issue rate. The budget, 32 x 112 x 112 x 64:
//   25.7 M outputs; 51.4 MB in + 51.4 MB out; 85 % of 4.26 TB/s -> 28.4 us.
//   132 SMs x 4 schedulers x 32 lanes x ~1.75 GHz ~ 29.6 T thread instructions/s, so
//   28.4 us is ~840 M of them: ~33 per output at full issue, ~16 at v9's 57 %.
//   The floor is 9 FFMAs per output (FP32 sums, which the tolerance needs). v10 spends
//   ~13: 9 FFMAs, 2.5 widenings, 0.5 packs, 0.3-0.6 shared loads, 0.1-0.3 stores, ~1 for the
//   copies and the rest; and it has no per-row barrier, so far fewer cycles idle.
//   * A tile per step, two in flight. A block owns a 2-D tile of 16 x 16 outputs of one image
//     for a slab of 8 S channels (S = 8, 4, 2 or 1 groups of 8, the largest dividing C / 8).
//     Its 18 x 18 x slab input (the halo zero-filled at the image's edges by cp.async's
//     src-size 0) is copied into one of two shared-memory buffers while the block computes
//     the tile in the other. The grid holds at most the resident blocks; each walks the tiles
//     blockIdx.x, + gridDim.x, ... (persistent): one cp.async wait and one barrier per tile
//     of ~1,700 (V = 8) or ~900 (V = 4) instructions a thread, where v9 had one per ~200. The
//     barrier both publishes tile i and frees the buffer of tile i - 1, where i + grid goes.
//   * The copies: a thread takes one or two 16-byte chunks of a buffer row (a column, a group
//     of 8 channels) and walks each down the tile's 18 rows: an addition, a compare and the
//     cp.async per copy. Their loops stay rolled (by 2): unrolled, the compiler spreads the
//     copies over the arithmetic and keeps their addresses live there (spills).
//   * A thread owns V channels (V = 4: 8 bytes, the default; V = 8: 16 bytes) of a 2 wide x
//     8 tall patch of outputs. It walks down the 10 input rows of its patch: per row 4 shared
//     loads (columns -1 .. 2 of the patch), each widened once (a shift or an AND per element:
//     a BF16 is the top half of an FP32, so no conversion instruction), and 18 V FFMAs into
//     the 3 output rows that row feeds. An output row is complete 2 input rows after it
//     starts: packed by cvt.rn.bf16x2.f32 and stored with st.global.cs. Widenings per output:
//     4 x 10 / (2 x 8) = 2.5.
//   * V = 4 against V = 8: the same instructions per output but for the loads and stores (8
//     bytes instead of 16), and ~60 % of the registers (~115: 36 taps, 24 sums, against ~190:
//     72 and 48), so twice the threads per tile: 16 warps an SM on the 64-channel layer
//     instead of 8, to hide the shared loads' latency. v10_depthwise_tiles_c8 / _c4 force each.
//   * The tile's coordinates are decoded once (when its copies are issued) and carried to the
//     next step; a patch wholly past the image's bottom or right edge computes nothing.
//   * The taps are FP32 registers, loaded when the slab changes (the grid is a multiple of the
//     slab count when it can be, so a block keeps one slab).
//   * The grid: the fewest rounds (tiles per block) the resident blocks allow, then the fewest
//     blocks that need no more rounds, so the last round is as full as the others.
//   * Banks: the lanes of a 128-byte phase of a shared load cover S x 8 / V lanes a pixel, the
//     pixels 2 columns apart; in a buffer row the 16-byte chunk l = column x S + group is
//     stored at l ^ (bit 3 of l) x S (S < 8), which puts those pixels on different banks
//     (S = 8: one pixel a phase, no swizzle). swizzle_is_sound checks it at compile time.
//   * Block sizes: S x 8 / V lanes a pixel x 8 column pairs x 2 patches down the tile (4, and
//     32-row tiles, when that is one lane a pixel). The buffers: 2 x 18 x 18 x 16 S bytes (83 KB
//     at S = 8: 2 blocks an SM; 41 KB at S = 4: 5).
// The sums are FP32 over the 9 products in filter-row, then column order (as v5, v7 and v9);
// zero-filled padding adds 0 x w. C % 8 != 0, pointers not 16-byte aligned and a tile count
// past 2^31 go to v9 (which passes them on to v7 and v5).
//
// Measured (H200, ch10_bench, % of the measured copy bandwidth): to be measured, by the
// second command below.
//
// Run: ctest --preset ch10-solution -R depthwise3x3/bf16/v10
//      build/ch10/bin/ch10_bench --op=depthwise3x3
//          --impl=v9_depthwise_ring,v10_depthwise_tiles,v10_depthwise_tiles_c8,v10_depthwise_tiles_c4,cudnn_grouped
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/mma.cuh"
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

constexpr int kTile = 16;          // output columns of a tile (and rows, for S > 1)
constexpr int kPatchRows = 8;      // output rows per thread
constexpr int kIn = kTile + 2;     // input columns of a tile
constexpr int kPairs = kTile / 2;  // column pairs across a tile

// Where chunk l of a buffer row is stored (see the header's banks): l ^ (bit 3 of l) x S for
// S < 8 groups a slab; S = 8 is not swizzled.
template <int kS>
__host__ __device__ constexpr int swizzle(int l) {
  return l ^ (((l >> 3) & 1) * (kS < 8 ? kS : 0));
}

// The shape of one kernel instance: S channel groups of 8 per slab, V channels per thread.
template <int kS_, int kV_>
struct Geometry {
  static constexpr int kS = kS_, kV = kV_;
  static_assert(kS == 1 || kS == 2 || kS == 4 || kS == 8, "a slab is 8, 16, 32 or 64 channels");
  static_assert(kV == 8 || kV == 4, "a thread owns 16 or 8 bytes of channels");
  using Vec = std::conditional_t<kV == 8, uint4, uint2>;         // kV BF16
  static constexpr int kLanes = kS * (8 / kV);                   // threads per pixel of a slab
  static constexpr int kRowGroups = kLanes == 1 ? 4 : 2;         // patches down a tile
  static constexpr int kTileRows = kRowGroups * kPatchRows;      // output rows of a tile
  static constexpr int kThreads = kLanes * kPairs * kRowGroups;  // 32 .. 256
  static constexpr int kRowChunks = kIn * kS;                    // 16-byte chunks per buffer row
  static constexpr int kChunks = (kTileRows + 2) * kRowChunks;   // per buffer
  static constexpr size_t kSmem = 2 * size_t(kChunks) * 16;      // two buffers
  // Registers: 9 kV taps, 6 kV sums (3 live output rows), the row being widened, addresses:
  // ~110 at V = 4, ~170-190 at V = 8. The buffers cap the blocks an SM holds (an H100 / H200 SM
  // has 228 KB of shared memory, 1 KB of it reserved per block); kMinBlocks is the most of
  // those that still leave kRegs registers a thread (each of the SM's 4 schedulers has 16 K
  // registers for its share of the warps), so that the compiler neither spills nor hoists every
  // shared load of the patch ahead of the arithmetic.
  static constexpr int kRegs = kV == 8 ? 176 : 128;
  static constexpr int kSmemBlocks = int(228 * 1024 / (kSmem + 1024));
  static constexpr int regs_at(int blocks) { return 16384 / (((blocks * kThreads / 32 + 3) / 4) * 32) / 8 * 8; }
  static constexpr int min_blocks() {
    int b = kSmemBlocks;
    while (b > 1 && regs_at(b) < kRegs) --b;
    return std::max(1, b);
  }
  static constexpr int kMinBlocks = min_blocks();
};

// The swizzle, checked at compile time: a permutation of a buffer row's chunks, and the lanes of
// every 128-byte phase of a shared load (8 lanes of 16 bytes or 16 of 8: S x 8 / V lanes a pixel,
// column 2 j + k of the pixel pair j, any buffer row) on different banks.
template <class G>
constexpr bool swizzle_is_sound() {
  bool seen[G::kRowChunks] = {};
  for (int l = 0; l < G::kRowChunks; ++l) {
    const int p = swizzle<G::kS>(l);
    if (p < 0 || p >= G::kRowChunks || seen[p]) return false;
    seen[p] = true;
  }
  constexpr int kPhase = 64 / G::kV;  // lanes per 128 bytes
  for (int row = 0; row < G::kTileRows + 2; ++row) {
    for (int lane0 = 0; lane0 < G::kLanes * kPairs; lane0 += kPhase) {
      for (int k = 0; k < 4; ++k) {
        bool bank[32] = {};
        for (int lane = lane0; lane < lane0 + kPhase; ++lane) {
          const int part = lane % G::kLanes, j = lane / G::kLanes;
          const int chunk = row * G::kRowChunks + swizzle<G::kS>((2 * j + k) * G::kS + part / (8 / G::kV));
          const int word = chunk * 4 + (part % (8 / G::kV)) * (G::kV / 2);
          for (int u = 0; u < G::kV / 2; ++u) {
            if (bank[(word + u) % 32]) return false;
            bank[(word + u) % 32] = true;
          }
        }
      }
    }
  }
  return true;
}
template <int kV>
constexpr bool swizzles_are_sound() {
  return swizzle_is_sound<Geometry<1, kV>>() && swizzle_is_sound<Geometry<2, kV>>() &&
         swizzle_is_sound<Geometry<4, kV>>() && swizzle_is_sound<Geometry<8, kV>>();
}
static_assert(swizzles_are_sound<8>() && swizzles_are_sound<4>(),
              "the buffer swizzle must be a conflict-free permutation");

// kV BF16 to FP32 by bit placement: a BF16 is the top 16 bits of the FP32 of the same value.
template <int kV, class Vec>
__device__ __forceinline__ void widen_bits(float (&f)[kV], const Vec& u) {
  const auto* v = reinterpret_cast<const uint32_t*>(&u);
#pragma unroll
  for (int i = 0; i < kV / 2; ++i) {
    f[2 * i] = __uint_as_float(v[i] << 16);
    f[2 * i + 1] = __uint_as_float(v[i] & 0xffff0000u);
  }
}

// One launch's tiling.
struct Tiles {
  int H, W, C;
  unsigned slabs, tiles_w, tiles_h;
  unsigned count;  // slabs x tiles_w x tiles_h x N
};

// Tile t, the slab fastest: its image, first output row and column, first channel.
struct Tile {
  int n, h0, w0, c0;
};
template <class G>
__device__ __forceinline__ Tile tile_at(const Tiles& t, unsigned i) {
  Tile o;
  o.c0 = int(i % t.slabs) * 8 * G::kS;
  i /= t.slabs;
  o.w0 = int(i % t.tiles_w) * kTile;
  i /= t.tiles_w;
  o.h0 = int(i % t.tiles_h) * G::kTileRows;
  o.n = int(i / t.tiles_h);
  return o;
}

// Copies tile `tl`'s input (rows h0 - 1 .., columns w0 - 1 .., the slab) into the buffer at
// shared address buf. A buffer row is kRowChunks 16-byte chunks l = (column, group); the thread
// takes chunks l = tid, tid + threads, ... (one or two) and walks each down the tile's rows, so
// that a copy costs a few additions, a compare and the cp.async. The loops stay rolled (the
// rows by 2): fully unrolled, the compiler spreads the ~20 copies over the arithmetic that
// follows and keeps their addresses live there, past the register budget (spills).
template <class G>
__device__ __forceinline__ void issue_tile(const bf16* __restrict__ x, const Tiles& t, const Tile& tl, uint32_t buf) {
  constexpr int kS = G::kS;
  const int64_t row_elems = int64_t(t.W) * t.C;
#pragma unroll 1
  for (int l = int(threadIdx.x); l < G::kRowChunks; l += G::kThreads) {
    const int v = tl.w0 - 1 + l / kS;  // the chunk's image column
    const bool col_ok = unsigned(v) < unsigned(t.W);
    // Its offset in x at input row 0 (image row h0 - 1): read only where the row is inside.
    int64_t at = ((int64_t(tl.n) * t.H + tl.h0 - 1) * t.W + v) * t.C + tl.c0 + (l % kS) * 8;
    uint32_t dst = buf + uint32_t(swizzle<kS>(l)) * 16u;
    int h = tl.h0 - 1;
#pragma unroll 2
    for (int r = 0; r < G::kTileRows + 2; ++r) {
      const bool ok = col_ok && unsigned(h) < unsigned(t.H);
      wb::ptx::cp_async_cg_16(dst, ok ? x + at : x, ok);
      ++h;
      at += row_elems;
      dst += G::kRowChunks * 16u;
    }
  }
}

// The persistent kernel: blocks walk tiles blockIdx.x, + gridDim.x, ...; two buffers, the next
// tile's copies in flight while this one is computed. Thread: channel part p (fastest: channels
// V p .. V p + V - 1 of the slab), column pair j, patch row group pr. C % 8 == 0, x, w, y
// 16-byte aligned.
template <class G>
__global__ void __launch_bounds__(G::kThreads, G::kMinBlocks)
    tiles_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y, Tiles t) {
  constexpr int kS = G::kS, kV = G::kV;
  using Vec = typename G::Vec;
  extern __shared__ __align__(16) uint4 smem[];  // [2][kTileRows + 2][kIn x S] 16-byte chunks
  const int p = int(threadIdx.x) % G::kLanes, j = int(threadIdx.x) / G::kLanes % kPairs;
  const int pr = int(threadIdx.x) / (G::kLanes * kPairs);
  const uint32_t smem_base = wb::ptx::smem_u32(smem);
  constexpr uint32_t kBufBytes = uint32_t(G::kChunks) * 16u;

  // This thread's 4 input columns in a buffer row (patch columns -1 .. 2), as byte offsets.
  int col_at[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) col_at[k] = swizzle<kS>((2 * j + k) * kS + p / (8 / kV)) * 16 + p % (8 / kV) * 2 * kV;
  const int row0 = pr * kPatchRows;  // the patch's first input row in the buffer

  unsigned i = blockIdx.x;
  if (i >= t.count) return;
  Tile tl = tile_at<G>(t, i);  // decoded once, when its copies are issued
  issue_tile<G>(x, t, tl, smem_base);
  wb::ptx::cp_async_commit();

  float tap[9][kV];
  int tap_c0 = -1;  // the slab whose taps are loaded
  const int64_t row_bytes = int64_t(t.W) * t.C * int64_t(sizeof(bf16));
  const int64_t col_bytes = int64_t(t.C) * int64_t(sizeof(bf16));
  for (unsigned b = 0;; b ^= 1u) {
    wb::ptx::cp_async_wait<0>();  // this thread's copies of tile i landed
    // Everyone's copies of tile i visible, and everyone done with tile i - 1: its buffer is free.
    __syncthreads();
    const unsigned next = i + gridDim.x;  // into the other buffer, in flight while i is computed
    Tile tn{};
    if (next < t.count) {
      tn = tile_at<G>(t, next);
      issue_tile<G>(x, t, tn, smem_base + (b ^ 1u) * kBufBytes);
    }
    wb::ptx::cp_async_commit();
    const int c = tl.c0 + kV * p;  // this thread's first channel
    if (tl.c0 != tap_c0) {         // block-uniform
      tap_c0 = tl.c0;
#pragma unroll
      for (int s = 0; s < 9; ++s) widen_bits<kV>(tap[s], __ldg(reinterpret_cast<const Vec*>(w + int64_t(s) * t.C + c)));
    }

    const int oh = tl.h0 + row0, ow = tl.w0 + 2 * j;  // the patch's first output
    // A patch wholly past the image's bottom or right edge (the last tiles of an image whose
    // sides are not multiples of 16) computes nothing; at the bottom that is whole warps.
    if (oh < t.H && ow < t.W) {
      const char* in = reinterpret_cast<const char*>(smem + b * G::kChunks + row0 * G::kRowChunks);
      const bool right_in = ow + 1 < t.W;
      char* out = reinterpret_cast<char*>(y + ((int64_t(tl.n) * t.H + oh) * t.W + ow) * t.C + c);
      float acc[kPatchRows][2][kV];
#pragma unroll
      for (int kr = 0; kr < kPatchRows + 2; ++kr) {
        // Input row kr feeds output rows kr - 2 .. kr through filter rows 2 .. 0.
#pragma unroll
        for (int sc = 0; sc < 4; ++sc) {
          float xf[kV];
          widen_bits<kV>(xf, *reinterpret_cast<const Vec*>(in + kr * G::kRowChunks * 16 + col_at[sc]));
#pragma unroll
          for (int r = 0; r < 3; ++r) {
            const int o = kr - r;
            if (o < 0 || o >= kPatchRows) continue;
#pragma unroll
            for (int jj = 0; jj < 2; ++jj) {
              const int s = sc - jj;
              if (s < 0 || s > 2) continue;
#pragma unroll
              for (int e = 0; e < kV; ++e) {
                const float prev = (r == 0 && s == 0) ? 0.0f : acc[o][jj][e];
                acc[o][jj][e] = fmaf(xf[e], tap[r * 3 + s][e], prev);
              }
            }
          }
        }
        const int o = kr - 2;  // complete now
        if (o < 0) continue;
        if (oh + o < t.H) {
#pragma unroll
          for (int jj = 0; jj < 2; ++jj) {
            if (jj == 1 && !right_in) continue;
            Vec v;
            auto* pk = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
            for (int e = 0; e < kV / 2; ++e) pk[e] = __floats2bfloat162_rn(acc[o][jj][2 * e], acc[o][jj][2 * e + 1]);
            __stcs(reinterpret_cast<Vec*>(out + jj * col_bytes), v);
          }
        }
        out += row_bytes;
      }
    }
    if (next >= t.count) break;
    i = next;
    tl = tn;
  }
  wb::ptx::cp_async_wait<0>();
}

// log2 of the channel groups of a slab: the largest k <= 3 with C / 8 a multiple of 2^k
// (C % 8 == 0).
int slab_log2(int C) {
  int k = 0;
  while (k < 3 && (C / 8) % (2 << k) == 0) ++k;
  return k;
}

template <int kS, int kV>
void launch(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  using G = Geometry<kS, kV>;
  Tiles t{H, W, C, unsigned(C / (8 * kS)), unsigned(wb::ceil_div(W, kTile)), unsigned(wb::ceil_div(H, G::kTileRows)),
          0};
  const int64_t count = int64_t(N) * t.slabs * t.tiles_w * t.tiles_h;
  if (count >= (int64_t{1} << 31)) {
    v9_depthwise_ring(x, w, y, N, H, W, C, stream);
    return;
  }
  t.count = unsigned(count);
  const void* kernel = reinterpret_cast<const void*>(&tiles_kernel<G>);
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(G::kSmem)));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, G::kThreads, G::kSmem));
  // The fewest rounds (tiles per block) the resident blocks allow, then the fewest blocks that
  // still need no more rounds: the last round is as full as the others. A multiple of the
  // slab count when that stays within the resident blocks, so that a block keeps its slab (and
  // its taps) from tile to tile.
  const int64_t resident = int64_t(std::max(1, sms)) * std::max(1, per_sm);
  const int64_t rounds = wb::ceil_div(count, resident);
  int64_t grid = wb::ceil_div(count, rounds);
  const int64_t whole_slabs = wb::ceil_div(grid, int64_t(t.slabs)) * t.slabs;
  if (whole_slabs <= resident) grid = std::min(whole_slabs, count);
  tiles_kernel<G><<<unsigned(grid), G::kThreads, G::kSmem, stream>>>(x, w, y, t);
  WB_CHECK_LAUNCH();
}

// v10 with V channels a thread: C % 8 != 0 and unaligned pointers to v9, else the kernel whose
// slab is the largest of 64, 32, 16, 8 channels that divides C.
template <int kV>
void run(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
  const bool aligned =
      (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
  if (C % 8 != 0 || !aligned) {
    v9_depthwise_ring(x, w, y, N, H, W, C, stream);
    return;
  }
  constexpr Depthwise3x3Fn* kLaunch[] = {&launch<1, kV>, &launch<2, kV>, &launch<4, kV>, &launch<8, kV>};
  kLaunch[slab_log2(C)](x, w, y, N, H, W, C, stream);
}

}  // namespace

void v10_depthwise_tiles(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<4>(x, w, y, N, H, W, C, stream);
}
void v10_depthwise_tiles_c8(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<8>(x, w, y, N, H, W, C, stream);
}
void v10_depthwise_tiles_c4(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<4>(x, w, y, N, H, W, C, stream);
}

}  // namespace ch10::solution
