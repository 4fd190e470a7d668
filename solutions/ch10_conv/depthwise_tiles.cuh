// v10's tiles, shared by its cp.async kernel (v10_depthwise_tiles.cu) and its TMA kernel
// (hopper/depthwise_tiles_tma_kernel.cu): the geometry of a tile and of a thread's patch, the
// buffer swizzle, the tile order, the arithmetic of a patch, and the persistent grid. v10's
// header (v10_depthwise_tiles.cu) says what each piece is for.
#pragma once
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "ch10.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch10::solution::tiles {

constexpr int kTile = 16;       // v10's output columns of a tile (Geometry::kTileCols; rows: kTileRows)
constexpr int kPatchRows = 8;   // output rows per thread
constexpr int kIn = kTile + 2;  // v10's input columns of a tile (the TMA box's width)

// The shape of one kernel instance: S channel groups of 8 per slab, V channels per thread, the
// buffer rows swizzled (cp.async: the copies write where they like) or not (a TMA box lands
// densely). v10 takes the defaults of the rest; its comparison forms (v10_depthwise_tiles.cu)
// set them: kBufs buffers (kBufs - 1 tiles in flight while one is computed), tiles kTileCols
// outputs wide, kRowGroups_ patches down a tile (0: the rule below).
template <int kS_, int kV_, bool kSwizzled_ = true, int kBufs_ = 2, int kTileCols_ = kTile, int kRowGroups_ = 0>
struct Geometry {
  static constexpr int kS = kS_, kV = kV_, kBufs = kBufs_, kTileCols = kTileCols_;
  static constexpr bool kSwizzled = kSwizzled_;
  static_assert(kBufs >= 2 && kTileCols % 2 == 0 && kTileCols >= 2, "two buffers or more, whole column pairs");
  static constexpr int kInCols = kTileCols + 2;    // input columns of a tile
  static constexpr int kColPairs = kTileCols / 2;  // column pairs across a tile
  static_assert(kS == 1 || kS == 2 || kS == 4 || kS == 8 || kS == 12 || kS == 18,
                "a slab is 8, 16, 32, 64, 96 or 144 channels");
  static_assert(kV == 8 || kV == 4, "a thread owns 16 or 8 bytes of channels");
  using Vec = std::conditional_t<kV == 8, uint4, uint2>;  // kV BF16
  static constexpr int kLanes = kS * (8 / kV);            // threads per pixel of a slab
  // Patches down a tile: 2 (16 x 16 tiles); 4 with one lane a pixel (16 x 32, for a block of
  // a warp); 1 with 24 lanes or more (16 x 8: the wide slabs' buffers stay small).
  static constexpr int kRowGroups = kRowGroups_ > 0 ? kRowGroups_ : kLanes >= 24 ? 1 : kLanes == 1 ? 4 : 2;
  static constexpr int kTileRows = kRowGroups * kPatchRows;                          // output rows of a tile
  static constexpr int kThreads = kLanes * kColPairs * kRowGroups;                   // 32 .. 288
  static constexpr int kRowChunks = kInCols * kS;                                    // 16-byte chunks per buffer row
  static constexpr int kChunks = (kTileRows + 2) * kRowChunks;                       // per buffer
  static constexpr uint32_t kBufBytes = (uint32_t(kChunks) * 16 + 127) / 128 * 128;  // TMA: 128 B aligned
  static constexpr size_t kSmem = kBufs * size_t(kBufBytes) + 16;                    // the buffers, two mbarriers (TMA)
  // Registers: 9 kV taps, 6 kV sums (3 live output rows), the row being widened, addresses:
  // ~90-110 at V = 4, ~165-180 at V = 8. The buffers cap the blocks an SM holds (an H100 / H200
  // SM has 228 KB of shared memory, 1 KB of it reserved per block); kMinBlocks is the most of
  // those that still leave kRegs registers a thread (each of the SM's 4 schedulers has 16 K
  // registers for its share of the warps), so that the compiler neither spills nor hoists every
  // shared load of the patch ahead of the arithmetic. 96 for the wide slabs at V = 4: two
  // blocks of 9 warps an SM need it.
  static constexpr int kRegs = kV == 8 ? 176 : kLanes >= 24 ? 96 : 104;
  static constexpr int kSmemBlocks = int(228 * 1024 / (kSmem + 1024));
  static constexpr int regs_at(int blocks) { return 16384 / (((blocks * kThreads / 32 + 3) / 4) * 32) / 8 * 8; }
  static constexpr int min_blocks() {
    int b = kSmemBlocks;
    while (b > 1 && regs_at(b) < kRegs) --b;
    return std::max(1, b);
  }
  static constexpr int kMinBlocks = min_blocks();
};

// Where chunk l of a buffer row is stored (see v10's header, banks): l ^ (bit 3 of l) x S for
// S < 8 groups a slab; S = 8 and unswizzled geometries store it at l.
template <class G>
__host__ __device__ constexpr int swizzle(int l) {
  return G::kSwizzled ? l ^ (((l >> 3) & 1) * (G::kS < 8 ? G::kS : 0)) : l;
}

// The swizzle, checked at compile time: a permutation of a buffer row's chunks, and the lanes of
// every 128-byte phase of a shared load (8 lanes of 16 bytes or 16 of 8: S x 8 / V lanes a pixel,
// column 2 j + k of the pixel pair j, any buffer row) on different banks.
template <class G>
constexpr bool swizzle_is_sound() {
  bool seen[G::kRowChunks] = {};
  for (int l = 0; l < G::kRowChunks; ++l) {
    const int p = swizzle<G>(l);
    if (p < 0 || p >= G::kRowChunks || seen[p]) return false;
    seen[p] = true;
  }
  constexpr int kPhase = 64 / G::kV;  // lanes per 128 bytes
  for (int row = 0; row < G::kTileRows + 2; ++row) {
    for (int lane0 = 0; lane0 < G::kLanes * G::kColPairs; lane0 += kPhase) {
      for (int k = 0; k < 4; ++k) {
        bool bank[32] = {};
        for (int lane = lane0; lane < lane0 + kPhase; ++lane) {
          const int part = lane % G::kLanes, j = lane / G::kLanes;
          const int chunk = row * G::kRowChunks + swizzle<G>((2 * j + k) * G::kS + part / (8 / G::kV));
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
constexpr bool swizzles_are_sound() {  // the cp.async geometries
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
  o.w0 = int(i % t.tiles_w) * G::kTileCols;
  i /= t.tiles_w;
  o.h0 = int(i % t.tiles_h) * G::kTileRows;
  o.n = int(i / t.tiles_h);
  return o;
}

// One thread's share of a tile: V channels (part p) of a 2 x 8 patch (column pair j, patch
// row group pr), computed from the tile's buffer and stored. The taps stay in registers from
// tile to tile and are reloaded when the slab changes.
template <class G>
struct PatchWorker {
  static constexpr int kS = G::kS, kV = G::kV;
  using Vec = typename G::Vec;
  int p, j, row0;
  int col_at[4];  // the patch's 4 input columns (-1 .. 2) in a buffer row, byte offsets
  float tap[9][kV];
  int tap_c0 = -1;  // the slab whose taps are loaded
  int64_t row_bytes, col_bytes;

  __device__ __forceinline__ explicit PatchWorker(const Tiles& t) {
    p = int(threadIdx.x) % G::kLanes;
    j = int(threadIdx.x) / G::kLanes % G::kColPairs;
    row0 = int(threadIdx.x) / (G::kLanes * G::kColPairs) * kPatchRows;  // the patch's first input row
#pragma unroll
    for (int k = 0; k < 4; ++k) col_at[k] = swizzle<G>((2 * j + k) * kS + p / (8 / kV)) * 16 + p % (8 / kV) * 2 * kV;
    row_bytes = int64_t(t.W) * t.C * int64_t(sizeof(bf16));
    col_bytes = int64_t(t.C) * int64_t(sizeof(bf16));
  }

  // Tile tl from the buffer at `buf` (generic address) into y.
  __device__ __forceinline__ void run(const bf16* __restrict__ w, bf16* __restrict__ y, const Tiles& t, const Tile& tl,
                                      const char* buf) {
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
      const char* in = buf + row0 * G::kRowChunks * 16;
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
  }
};

// The tiling of an N x H x W x C problem for geometry G; false when there are 2^31 tiles or more
// (the launchers pass such a problem on).
template <class G>
bool make_tiles(int N, int H, int W, int C, Tiles& t) {
  t = Tiles{H,
            W,
            C,
            unsigned(C / (8 * G::kS)),
            unsigned(wb::ceil_div(W, G::kTileCols)),
            unsigned(wb::ceil_div(H, G::kTileRows)),
            0};
  const int64_t count = int64_t(N) * t.slabs * t.tiles_w * t.tiles_h;
  if (count >= (int64_t{1} << 31)) return false;
  t.count = unsigned(count);
  return true;
}

// The persistent grid for `kernel` (G::kThreads threads, G::kSmem bytes of dynamic shared
// memory, opted in here): the fewest rounds (tiles per block) the resident blocks allow, then
// the fewest blocks that still need no more rounds, so that the last round is as full as the
// others; a multiple of the slab count when that stays within the resident blocks, so that a
// block keeps its slab (and its taps) from tile to tile.
template <class G>
unsigned persistent_grid(const void* kernel, const Tiles& t) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(G::kSmem)));
  const int64_t count = t.count;
  const int64_t resident = std::max(1, wb::blocks_per_gpu(kernel, G::kThreads, G::kSmem));
  const int64_t rounds = wb::ceil_div(count, resident);
  int64_t grid = wb::ceil_div(count, rounds);
  const int64_t whole_slabs = wb::ceil_div(grid, int64_t(t.slabs)) * t.slabs;
  if (whole_slabs <= resident) grid = std::min(whole_slabs, count);
  return unsigned(grid);
}

// v10's kernels' common requirements: C % 8 == 0 (16-byte chunks of channels) and x, w, y
// 16-byte aligned.
inline bool tiles_apply(const bf16* x, const bf16* w, const bf16* y, int C) {
  return C % 8 == 0 &&
         (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
}

// The slabs the launchers compile: 8 S channels for S in kSlabGroups (their tables follow it).
constexpr int kSlabGroups[] = {1, 2, 4, 8, 12, 18};

// The slab for C (C % 8 == 0), as an index into kSlabGroups. 64 channels when C / 8 is a
// multiple of 8: a pixel's slab is whole 128-byte lines. Otherwise, with `wide`, 144 or 96
// channels when they divide C (MobileNet's widths): slabs of 32 or 16 channels cut each pixel
// into 64- or 32-byte pieces, which DRAM serves at a fraction of its bandwidth (the 96- and
// 144-channel layers ran at 77 % and 50 % of the copy with them). Else the largest of 32, 16, 8.
inline int slab_choice(int C, bool wide) {
  const int g = C / 8;
  if (g % 8 == 0) return 3;
  if (wide && g % 18 == 0) return 5;
  if (wide && g % 12 == 0) return 4;
  return g % 4 == 0 ? 2 : g % 2 == 0 ? 1 : 0;
}

}  // namespace ch10::solution::tiles
