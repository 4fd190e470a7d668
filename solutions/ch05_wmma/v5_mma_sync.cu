// v5 — ldmatrix + mma.sync.m16n8k16 on an XOR-swizzled shared-memory layout.
//
// What changes over v4: the WMMA layer is gone. Warps issue the PTX instructions that
// WMMA hides, and choose their shared-memory layout themselves:
//   * mma.sync.m16n8k16 computes a 16 x 8 tile with k = 16; a warp tile of 64 x 64 is
//     4 x 8 of them, 128 FP32 accumulators per lane, all in registers (no scratch
//     round trip at the end: the epilogue writes straight from the accumulators).
//   * ldmatrix.x4 fetches four 8 x 8 sub-matrices per instruction, already in the
//     register layout mma.sync wants (ldmatrix.trans for B, which is row-major in K).
//   * no padding: the tiles are dense, and the 16-byte pieces of each row are permuted
//     by an XOR with the row number, so that the eight rows an ldmatrix phase reads fall in
//     eight different bank groups (conflict-free) and the cp.async writes stay 16 bytes wide.
//       A tile (128 x 32): piece p (of 4) of row r is stored at piece p ^ ((r / 2) % 4)
//       B tile (32 x 256): piece p (of 32) of row k is stored at piece p ^ (k % 8)
//   * 128 x 256 block tiles (8 warps, 2 x 4) and blocks launched in groups of 8 block rows,
//     so that blocks running together reuse the same columns of B from L2; 32 along K with
//     4 stages (96 KB of shared memory, which every sm_80+ GPU has).
//   * two sets of fragments: while the tensor cores work on one 16-deep step, ldmatrix
//     already fetches the next one's, across the tile boundary too (the barrier sits before
//     the last step of a tile, not after it). With only 8 warps per SM (each holds ~250
//     registers), a warp must hide its own shared-memory latency: this took 4096^3 BF16
//     on an H100 from 392 us to 370 us.
// Edges: the 16-byte copies fill zeros outside the matrix (K and N multiples of 8); other
// shapes load element by element into the same layout.
// Why faster: each byte read from shared memory feeds 2x more tensor-core work than v4,
// and there are no store_matrix_sync / reload round trips.
//
// From harness/device/mma_pipeline.cuh (shared with v7, v8 and chapter 9's prefill GEMM):
// the block order (grouped_tile), the main loop (mma_pipeline), the tile products
// (mma_tiles_16816) and the launch; from mma_common.cuh: store_pair.
//
// Run: build/ch05/bin/ch05_bench --impl=v5_mma_sync,v4_cp_async_pipeline,reference
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/mma_pipeline.cuh"
#include "ladder.cuh"
#include "mma_common.cuh"

namespace ch05::solution {
namespace {

using namespace wb::ptx;   // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)
using namespace wb::gemm;  // the tile order, pipeline and launch (harness/device/mma_pipeline.cuh)

// A tile configuration: block tile BM x BN, step BK along K, WARPS_M x WARPS_N warps,
// STAGES shared-memory stages.
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_>
struct Config {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, STAGES = STAGES_;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
  static constexpr int MT = WM / 16, NT = WN / 8;             // mma tiles per warp
  static constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN;  // elements per stage
  static constexpr int SMEM = STAGES * (A_STAGE + B_STAGE) * 2;
  static constexpr int MIN_BLOCKS = THREADS <= 128 ? 2 : 1;  // at most 255 registers per thread either way
  static_assert(BK % 16 == 0 && BK / 8 <= 8, "rows of A: 2 to 8 pieces of 16 bytes");
  static_assert((BK / 16) % 2 == 0, "an even number of k steps per tile: the two fragment sets alternate");
  static_assert(BN % 64 == 0, "rows of B: whole groups of 8 pieces");
  static_assert(WM % 16 == 0 && WN % 16 == 0, "ldmatrix.x4 covers 16 x 16");
  static_assert(MT * 16 == WM && NT * 8 == WN, "the warp tile is whole 16 x 8 mma tiles");
  static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0, "whole pieces per thread");
};

// 96 KB of shared memory: fits every sm_80+ GPU (sm_86/89 allow 99 KB). Measured on an
// H100 at 4096^3 BF16: 370 us. A 64-deep step with 3 stages (144 KB, half the barriers)
// took 440 us: its second fragment set pushes ptxas past 255 registers and it spills.
using Tile = Config<128, 256, 32, 2, 4, 4>;

[[maybe_unused]] constexpr int kGroupM = 8;  // block rows launched together (unused before sm_80)

// Element offset of the 16-byte piece `p` of row `r` of the swizzled A tile (BK / 8 pieces
// per row): the piece index is XORed with the row's position in its 128-byte line group,
// so the 8 rows an ldmatrix phase reads land in 8 different bank groups.
template <class Cfg>
__device__ __forceinline__ int a_off(int r, int p) {
  constexpr int P = Cfg::BK / 8, rows_per_line = 8 / P;
  return r * Cfg::BK + ((p ^ ((r / rows_per_line) & (P - 1))) << 3);
}
// The same for B (BN / 8 >= 8 pieces per row): the low 3 bits of the piece index XOR k % 8.
template <class Cfg>
__device__ __forceinline__ int b_off(int k, int p) {
  return k * Cfg::BN + ((p ^ (k & 7)) << 3);
}

// The (ROWS x COLS) tile of X (rows x cols, row-major) at (r0, c0), in 16-byte pieces: piece
// p of tile row r goes to s + offset(r, p). kAsync: 16-byte cp.async with zero fill; else
// element by element, zeros outside X.
template <class Cfg, class In, bool kAsync, int ROWS, int COLS, class Offset>
__device__ __forceinline__ void load_pieces(In* s, const In* X, int rows, int cols, int r0, int c0, Offset offset) {
  constexpr int kPieces = ROWS * COLS / 8;
#pragma unroll
  for (int i = 0; i < kPieces / Cfg::THREADS; ++i) {
    const int c = threadIdx.x + i * Cfg::THREADS, r = c / (COLS / 8), p = c % (COLS / 8);
    const int gr = r0 + r, gc = c0 + p * 8;
    In* dst = s + offset(r, p);
    if constexpr (kAsync) {
      const bool in = gr < rows && gc < cols;
      cp_async_16(dst, in ? X + size_t(gr) * cols + gc : X, in);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) dst[e] = (gr < rows && gc + e < cols) ? X[size_t(gr) * cols + gc + e] : zero<In>();
    }
  }
}

// One stage: the (BM x BK) tile of A at (row0, k0) and the (BK x BN) tile of B at
// (k0, col0). kAsync: 16-byte cp.async with zero fill; else element by element.
template <class Cfg, class In, bool kAsync>
__device__ __forceinline__ void load_stage(In* sA, In* sB, const In* A, const In* B, int M, int N, int K, int row0,
                                           int col0, int k0) {
  load_pieces<Cfg, In, kAsync, Cfg::BM, Cfg::BK>(sA, A, M, K, row0, k0, a_off<Cfg>);
  load_pieces<Cfg, In, kAsync, Cfg::BK, Cfg::BN>(sB, B, K, N, k0, col0, b_off<Cfg>);
}

template <class Cfg, class In, class Out, bool kAsync>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    mma_sync_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
  constexpr int WM = Cfg::WM, WN = Cfg::WN, MT = Cfg::MT, NT = Cfg::NT;
  extern __shared__ __align__(128) unsigned char smem[];
  In* sA = reinterpret_cast<In*>(smem);  // STAGES x (BM x BK), swizzled
  In* sB = sA + STAGES * Cfg::A_STAGE;   // STAGES x (BK x BN), swizzled

  // Block (bm, bn) from the linear block index, in groups of kGroupM block rows: the
  // blocks running at the same time share columns of B (and rows of A) in L2.
  const TileCorner tile = grouped_tile<BM, BN, kGroupM>(M, N);
  const int row0 = tile.row0, col0 = tile.col0;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm = warp / Cfg::WARPS_N, wn = warp % Cfg::WARPS_N;
  const int tiles = (K + BK - 1) / BK;

  float acc[MT][NT][4];
  zero_acc(acc);

  // K tile t into stage s.
  auto stage_tile = [&](int s, int t) {
    load_stage<Cfg, In, kAsync>(sA + s * Cfg::A_STAGE, sB + s * Cfg::B_STAGE, A, B, M, N, K, row0, col0, t * BK);
  };

  // Fragments for one 16-deep step kk of a tile: rows of A through ldmatrix, columns of B
  // through ldmatrix.trans (16 x 16 each).
  auto load_frags = [&](uint32_t(&a)[MT][4], uint32_t(&b)[NT / 2][4], int stage, int kk) {
    const In* a_tile = sA + stage * Cfg::A_STAGE;
    const In* b_tile = sB + stage * Cfg::B_STAGE;
#pragma unroll
    for (int i = 0; i < MT; ++i) {  // rows wm*WM + i*16 + (lane % 16), k pieces 2kk + lane / 16
      const int r = wm * WM + i * 16 + (lane & 15), p = kk * 2 + (lane >> 4);
      ldmatrix_x4(a[i], smem_u32(a_tile + a_off<Cfg>(r, p)));
    }
#pragma unroll
    for (int j = 0; j < NT / 2; ++j) {  // k rows 16kk + (lane % 16), 16 columns from wn*WN + j*16
      const int k = kk * 16 + (lane & 15), p = (wn * WN + j * 16) / 8 + (lane >> 4);
      ldmatrix_x4_trans(b[j], smem_u32(b_tile + b_off<Cfg>(k, p)));
    }
  };

  // STAGES tiles in flight and two sets of fragments: while the tensor cores work on step
  // kk, the next step's fragments are already on their way from shared memory
  // (wb::gemm::mma_pipeline: the barrier sits before the last step of a tile).
  uint32_t a[2][MT][4], b[2][NT / 2][4];
  mma_pipeline<STAGES, BK / 16>(
      tiles, a, b, stage_tile, load_frags,
      [&](const uint32_t(&af)[MT][4], const uint32_t(&bf)[NT / 2][4]) { mma_tiles_16816<In>(acc, af, bf); });
  cp_async_wait<0>();

  // Epilogue straight from the accumulators: lane (g, q) holds rows g and g + 8, columns
  // 2q and 2q + 1 of each 16 x 8 tile.
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    const int r = row0 + wm * WM + i * 16 + g;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int c = col0 + wn * WN + j * 8 + 2 * q;
      store_pair(D, C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
      store_pair(D, C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
    }
  }
#else
  __trap();  // not reached: mma.sync.m16n8k16 and cp.async need sm_80
#endif
}

template <class Cfg, class In, class Out, bool kAsync>
void launch(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  const long long blocks = (long long)((M + Cfg::BM - 1) / Cfg::BM) * ((N + Cfg::BN - 1) / Cfg::BN);
  launch_with_smem<&mma_sync_kernel<Cfg, In, Out, kAsync>>(static_cast<unsigned>(blocks), Cfg::THREADS, Cfg::SMEM,
                                                           stream, M, N, K, A, B, C, D);
}

template <class Cfg, class In, class Out>
void run(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  const bool aligned =
      K % 8 == 0 && N % 8 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 && reinterpret_cast<uintptr_t>(B) % 16 == 0;
  if (aligned) {
    launch<Cfg, In, Out, true>(M, N, K, A, B, C, D, stream);
  } else {
    launch<Cfg, In, Out, false>(M, N, K, A, B, C, D, stream);
  }
}

}  // namespace

CH05_LAUNCHER(v5_mma_sync) { run<Tile, In, Out>(M, N, K, A, B, C, D, stream); }

CH05_INSTANTIATE_16BIT(v5_mma_sync);

}  // namespace ch05::solution
