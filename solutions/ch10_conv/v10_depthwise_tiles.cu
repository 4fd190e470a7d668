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
//   * A tile per step, two in flight. A block owns a 2-D tile of 16 x 16 outputs (16 x 8 for
//     the wide slabs) of one image for a slab of 8 S channels (below). Its input, the tile
//     with a halo of one pixel (18 x 18 x slab; the halo zero-filled at the image's edges by
//     cp.async's src-size 0), is copied into one of two shared-memory buffers while the block
//     computes the tile in the other. The grid holds at most the resident blocks; each walks the tiles
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
//     bytes instead of 16), and ~60 % of the registers (~100: 36 taps, 24 sums, against
//     ~170: 72 and 48), so twice the threads per tile: 16 warps an SM on the 64-channel layer
//     instead of 8, to hide the shared loads' latency. v10_depthwise_tiles_c8 forces V = 8.
//   * The slab (slab_choice, depthwise_tiles.cuh): 64 channels when C / 8 is a multiple of 8
//     (a pixel's slab is whole 128-byte lines), else 144 or 96 channels where they divide C,
//     else the largest of 32, 16, 8. The first measured form took the largest power of two
//     (now v10_depthwise_tiles_pow2): 32 channels on the 96-channel layer, 16 on the 144 one,
//     so every pixel was cut into 64- or 32-byte pieces read by 3 or 9 blocks, and those
//     layers ran at 77 % and 50 % of the copy where the 64-channel one ran at 83 %. The wide
//     slabs (192 and 288 bytes a pixel, whole pixels on those layers) take 16 x 8 tiles, so
//     that two buffers stay at 69 and 104 KB, and 24 or 36 lanes a pixel.
//   * The tile's coordinates are decoded once (when its copies are issued) and carried to the
//     next step; a patch wholly past the image's bottom or right edge computes nothing.
//   * The taps are FP32 registers, loaded when the slab changes (the grid is a multiple of the
//     slab count when it can be, so a block keeps one slab).
//   * The grid: the fewest rounds (tiles per block) the resident blocks allow, then the fewest
//     blocks that need no more rounds, so the last round is as full as the others.
//   * Banks: the lanes of a 128-byte phase of a shared load cover S x 8 / V lanes a pixel, the
//     pixels 2 columns apart; in a buffer row the 16-byte chunk l = column x S + group is
//     stored at l ^ (bit 3 of l) x S (S < 8), which puts those pixels on different banks
//     (S = 8: one pixel a phase, no swizzle). swizzle_is_sound checks it at compile time. The
//     wide slabs are not swizzled: one phase in three shares banks two ways.
//   * Block sizes: S x 8 / V lanes a pixel x 8 column pairs x 2 patches down the tile (4, and
//     32-row tiles, with one lane a pixel; 1, and 8-row tiles, with 24 lanes or more). The
//     buffers: 2 x 18 x (tile rows + 2) x 16 S bytes (83 KB at S = 8: 2 blocks an SM).
//   * v10_depthwise_tiles_tma (Hopper) brings each tile's input as one TMA box instead of the
//     copies (hopper/depthwise_tiles_tma_kernel.cu); the geometry, the patch arithmetic and the
//     grid are shared through depthwise_tiles.cuh.
//   * Two comparison forms, the same kernel with other Geometry parameters (Form3Buf, FormFit
//     below): v10_depthwise_tiles_3buf, three buffers (two tiles in flight a block; 8-row
//     tiles from 64 channels, 8 x 8 at 144, so that 3, 2 and 2 blocks still fit an SM), and
//     v10_depthwise_tiles_fit, 8 x 8 tiles on the 144-channel slab (they divide 56 x 56; 1,568
//     tiles on 396 resident blocks). Measured on an H200 (% of the copy bandwidth, v10 then
//     two buffers everywhere 83.7 / 80.7 / 58.3): _3buf 85.4 / 81.2 / 59.9, _fit 84.1 / 80.7 /
//     65.1 on the 64-, 96- and 144-channel layers. v10 (FormV10) now takes _3buf's geometry at
//     64 channels and _fit's at 144: 85.8 / 80.7 / 65.4 in the run after that choice.
// The sums are FP32 over the 9 products in filter-row, then column order (as v5, v7 and v9);
// zero-filled padding adds 0 x w. C % 8 != 0, pointers not 16-byte aligned and a tile count
// past 2^31 go to v9 (which passes them on to v7 and v5).
//
// Measured (H200, ch10_bench, measured copy 4,284 GB/s; median us, % of that copy):
//   32 x 112 x 112 x 64: 28.9 (83.1 %); v9 33.7
//   32 x 112 x 112 x 96: 44.7 (80.5 %); v9 55.4; power-of-two slabs (_pow2) 46.4
//   32 x 56 x 56 x 144:  23.3 (58.0 %); v9 28.4; power-of-two slabs (_pow2) 26.9
// (cuDNN's grouped convolution, an earlier run: 49.0, 72.2, 33.7.)
// V = 8 (_c8): 29.0, 47.5, 24.4; the TMA form: 30.0, 45.9, 29.1. Short of the 85 % target on
// every layer (the 64-channel one by 2 %): the TMA form, which issues no copy instruction, is
// no faster, so the copies' instructions are not the limit; the wide slabs' gain says the size
// of the piece of a pixel each block reads is one. What is left on the 144-channel layer: its
// 896 tiles on 264 resident blocks (3.4 rounds, so 4), and the 56-wide rows' half-empty last
// tile.
//
// Run: ctest --preset ch10-solution -R depthwise3x3/bf16/v10
//      build/ch10/bin/ch10_bench --op=depthwise3x3
//          --impl=v9_depthwise_ring,v10_depthwise_tiles,v10_depthwise_tiles_pow2,v10_depthwise_tiles_c8,v10_depthwise_tiles_tma,cudnn_grouped
//      build/ch10/bin/ch10_bench --op=depthwise3x3/bf16 --benchmark_repetitions=5
//          --impl=v10_depthwise_tiles,v10_depthwise_tiles_3buf,v10_depthwise_tiles_fit
#include <cstdint>
#include <iterator>
#include <type_traits>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/mma.cuh"
#include "runtime/errors.cuh"
#include "depthwise_tiles.cuh"
#include "ladder.cuh"

#ifdef WB_CH10_HOPPER
#include <stdexcept>

#include "runtime/device.cuh"
#include "hopper/hopper.cuh"
#endif

namespace ch10::solution {
namespace {

using namespace tiles;

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
    uint32_t dst = buf + uint32_t(swizzle<G>(l)) * 16u;
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

// The persistent kernel: blocks walk tiles blockIdx.x, + gridDim.x, ...; G::kBufs buffers (v10:
// two), the next kBufs - 1 tiles' copies in flight while this one is computed (PatchWorker: a
// thread's share of it). C % 8 == 0, x, w, y 16-byte aligned.
template <class G>
__global__ void __launch_bounds__(G::kThreads, G::kMinBlocks)
    tiles_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y, Tiles t) {
  constexpr int kAhead = G::kBufs - 1;           // tiles in flight while one is computed
  extern __shared__ __align__(128) char smem[];  // [kBufs][kBufBytes]: [kTileRows + 2][kInCols x S] chunks
  const uint32_t smem_base = wb::ptx::smem_u32(smem);
  unsigned i = blockIdx.x;
  if (i >= t.count) return;
  // tl[k]: tile i + k x grid, decoded once, when its copies are issued (into buffer k, then on
  // round the ring). The grid is at most the resident blocks, so i + kAhead x grid stays far
  // below 2^32.
  Tile tl[kAhead];
#pragma unroll
  for (int k = 0; k < kAhead; ++k) {
    const unsigned at = i + unsigned(k) * gridDim.x;
    if (k == 0 || at < t.count) {
      tl[k] = tile_at<G>(t, at);
      issue_tile<G>(x, t, tl[k], smem_base + unsigned(k) * G::kBufBytes);
    }
    wb::ptx::cp_async_commit();
  }
  PatchWorker<G> worker(t);
  // Buffer b holds tile i; the ring's steps written so that two buffers (v10) cost a XOR.
  constexpr auto step = [](unsigned b, unsigned k) { return G::kBufs == 2 ? b ^ k : (b + k) % G::kBufs; };
  for (unsigned b = 0;; b = step(b, 1u)) {
    wb::ptx::cp_async_wait<kAhead - 1>();  // this thread's copies of tile i landed
    // Everyone's copies of tile i visible, and everyone done with tile i - 1: its buffer is free.
    __syncthreads();
    // Into tile i - 1's buffer, in flight while i (and the tiles between) are computed.
    const unsigned next = i + unsigned(kAhead) * gridDim.x;
    Tile tn{};
    if (next < t.count) {
      tn = tile_at<G>(t, next);
      issue_tile<G>(x, t, tn, smem_base + step(b, kAhead) * G::kBufBytes);
    }
    wb::ptx::cp_async_commit();
    worker.run(w, y, t, tl[0], smem + b * G::kBufBytes);
    const unsigned following = kAhead == 1 ? next : i + gridDim.x;
    if (following >= t.count) break;
    i = following;
#pragma unroll
    for (int k = 0; k + 1 < kAhead; ++k) tl[k] = tl[k + 1];
    tl[kAhead - 1] = tn;
  }
  wb::ptx::cp_async_wait<0>();
}

template <class G>
void launch(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  Tiles t;
  if (!make_tiles<G>(N, H, W, C, t)) {
    v9_depthwise_ring(x, w, y, N, H, W, C, stream);
    return;
  }
  const unsigned grid = persistent_grid<G>(reinterpret_cast<const void*>(&tiles_kernel<G>), t);
  tiles_kernel<G><<<grid, G::kThreads, G::kSmem, stream>>>(x, w, y, t);
  WB_CHECK_LAUNCH();
}

// The geometry of slab S: v10's with V channels a thread (Form<kV>), or a comparison form.
template <int kV>
struct Form {
  template <int kS>
  using G = Geometry<kS, kV>;
};
// _3buf: three buffers, two tiles in flight per block; the 64-, 96- and 144-channel slabs in
// 8-row tiles (8 x 8 at 144) so that a block's three buffers still leave 3, 2 and 2 blocks an
// SM: 138, 138 and 115 KB of copies in flight an SM where v10 has 83, 104 and 104.
struct Form3Buf {
  template <int kS>
  using G = Geometry<kS, 4, true, 3, kS == 18 ? 8 : kTile, kS >= 8 ? 1 : 0>;
};
// _fit: the 144-channel slab in 8 x 8 tiles, which divide 56 x 56 (no half-empty tile at a
// row's end), 3 blocks an SM: 1,568 tiles on 396 resident blocks, 3.96 rounds where v10 has 896
// on 264, 3.4; v10 elsewhere.
struct FormFit {
  template <int kS>
  using G = Geometry<kS, 4, true, 2, kS == 18 ? 8 : kTile>;
};

// v10 itself: per slab, the form measured fastest on an H200 (one run, % of the copy
// bandwidth): the 64-channel slab with _3buf's three buffers (85.4 % against 83.7 % with two),
// the 144-channel slab in _fit's 8 x 8 tiles (65.1 % against 58.3 %), the others two buffers of
// 16-column tiles (the 96-channel slab measured 80.7 % so and 81.2 % with three: no gain
// outside the noise).
struct FormV10 {
  template <int kS>
  using G = std::conditional_t<kS == 8, Form3Buf::G<8>, std::conditional_t<kS == 18, FormFit::G<18>, Geometry<kS, 4>>>;
};

// v10 with the geometries of Form: C % 8 != 0 and unaligned pointers to v9, else the kernel of
// the slab slab_choice picks (wide: slabs of 96 and 144 channels allowed).
template <class F, bool kWide>
void run(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
  if (!tiles_apply(x, w, y, C)) {
    v9_depthwise_ring(x, w, y, N, H, W, C, stream);
    return;
  }
  constexpr Depthwise3x3Fn* kLaunch[] = {&launch<typename F::template G<1>>,  &launch<typename F::template G<2>>,
                                         &launch<typename F::template G<4>>,  &launch<typename F::template G<8>>,
                                         &launch<typename F::template G<12>>, &launch<typename F::template G<18>>};
  static_assert(std::size(kLaunch) == std::size(kSlabGroups));
  kLaunch[slab_choice(C, kWide)](x, w, y, N, H, W, C, stream);
}

}  // namespace

void v10_depthwise_tiles(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<FormV10, true>(x, w, y, N, H, W, C, stream);
}
void v10_depthwise_tiles_c8(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<Form<8>, true>(x, w, y, N, H, W, C, stream);
}
void v10_depthwise_tiles_pow2(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<Form<4>, false>(x, w, y, N, H, W, C, stream);
}
void v10_depthwise_tiles_3buf(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<Form3Buf, true>(x, w, y, N, H, W, C, stream);
}
void v10_depthwise_tiles_fit(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  run<FormFit, true>(x, w, y, N, H, W, C, stream);
}

// The tiles by TMA (Hopper): one thread asks for a tile's whole 4-D box, zeros outside the
// image, instead of ~20 cp.async a thread; the kernel is hopper/depthwise_tiles_tma_kernel.cu.
// Where it does not apply (C % 8 != 0, unaligned pointers, too many tiles) v10 runs.
void v10_depthwise_tiles_tma(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
#ifdef WB_CH10_HOPPER
  static const bool hopper = wb::query_device().has_wgmma();
  if (hopper) {
    if (!tiles_apply(x, w, y, C) || !hopper::depthwise_tiles_tma(x, w, y, N, H, W, C, stream)) {
      v10_depthwise_tiles(x, w, y, N, H, W, C, stream);
    }
    return;
  }
  throw std::runtime_error(
      "v10_depthwise_tiles_tma needs sm_90a (Hopper, compute capability 9.0): TMA does not exist "
      "elsewhere");
#else
  (void)x, (void)w, (void)y, (void)stream;
  throw std::runtime_error(
      "v10_depthwise_tiles_tma needs a build that includes the Hopper library (sm_90 in CMAKE_CUDA_ARCHITECTURES)");
#endif
}

}  // namespace ch10::solution
