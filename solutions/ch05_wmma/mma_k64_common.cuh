// What v7 (16-bit inputs, mma.sync.m16n8k16) and v8 (INT8, m16n8k32) share: the tiling
// (128 x 256 block tiles of 8 warps, 64 x 64 each, 3 stages whose rows of A are one 128-byte
// line), the per-thread copy plan with its addresses worked out once, the copy of one K tile
// into a stage, the main loop that rotates the stage addresses held in registers, and the
// launch (the fallback where a block cannot have 144 KB, the aligned or element-wise kernel).
// Each step keeps its fragment loads, its tensor-core step, B's swizzle and its epilogue.
#pragma once
#include <cstdint>

#include "ch05.cuh"
#include "runtime/device.cuh"
#include "device/async_copy.cuh"
#include "device/mma_pipeline.cuh"

namespace ch05::solution {

// kElemBytes: 2 (FP16/BF16) or 1 (INT8); kOutLd: 4-byte values per staged output row.
template <int kElemBytes, int kOutLd_>
struct K64Tiling {
  static constexpr int kBM = 128, kBN = 256, kBK = 128 / kElemBytes, kStages = 3;
  static constexpr int kWarpsM = 2, kWarpsN = 4, kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // 64 x 64 warp tile
  // mma tiles per warp, k steps per stage (one step: 32 bytes of K)
  static constexpr int kMT = kWM / 16, kNT = kWN / 8, kKK = kBK * kElemBytes / 32;
  static constexpr int kARow = kBK * kElemBytes, kBRow = kBN * kElemBytes;  // bytes per row of a stage
  static constexpr int kAStage = kBM * kARow, kBStage = kBK * kBRow;        // 16 KB, 32 KB
  static constexpr int kPipe = kStages * (kAStage + kBStage);               // 144 KB
  static constexpr int kOutLd = kOutLd_;
  static constexpr int kOutBytes = kBM * kOutLd * 4;  // the staged output tile (reuses the pipeline)
  static constexpr int kSmem = kPipe > kOutBytes ? kPipe : kOutBytes;
  static constexpr int kGroupM = 8;  // block rows launched together
  static_assert(kARow == 128, "rows of A are one 128-byte line: the XOR with row % 8 covers all 8 pieces");
  static_assert(kBRow % 128 == 0, "rows of B are whole 128-byte lines");
  static_assert(kWM == 64 && kWN == 64 && kKK == 4, "the offset tables cover 4 m tiles, 4 k steps, 4 column groups");
  static_assert(kBM * (kARow / 16) == 4 * kThreads && kBK * (kBRow / 16) == 8 * kThreads, "4 A and 8 B pieces each");
};

// Where a block of v7 or v8 works: its stages in shared memory, its output tile (block rows in
// groups of kGroupM, as in v5), this thread's warp and place in the 2 x 4 warp grid, and the
// number of K tiles.
struct K64Block {
  unsigned char* sA;  // kStages x (BM x BK), swizzled
  unsigned char* sB;  // kStages x (BK x BN), swizzled
  uint32_t sA32, sB32;
  int row0, col0;
  int tid, lane, warp, wm, wn;
  int tiles;
};
template <class Tiling>
__device__ __forceinline__ K64Block k64_block(unsigned char* smem, int M, int N, int K) {
  unsigned char* sA = smem;
  unsigned char* sB = smem + Tiling::kStages * Tiling::kAStage;
  const uint32_t sA32 = wb::ptx::smem_u32(sA), sB32 = wb::ptx::smem_u32(sB);
  const wb::gemm::TileCorner tile = wb::gemm::grouped_tile<Tiling::kBM, Tiling::kBN, Tiling::kGroupM>(M, N);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / Tiling::kWarpsN, wn = warp % Tiling::kWarpsN;
  const int tiles = (K + Tiling::kBK - 1) / Tiling::kBK;
  return {sA, sB, sA32, sB32, tile.row0, tile.col0, tid, lane, warp, wm, wn, tiles};
}

// A's ldmatrix addresses (v7's; v8's A fragments are byte for byte the same): lane l reads row
// l % 16 of a 16-row group at piece 2m + l / 16 (m = the k step); those rows are l % 8 modulo 8,
// so the stored piece is (2m + l / 16) ^ (l % 8) = 2m ^ x: four offsets per lane, fixed for the
// kernel. A fragment's address: stage + a_ld + i * 16 rows + xo[kk].
struct K64AFrag {
  uint32_t xo[4];
  uint32_t a_ld;
};
template <class Tiling>
__device__ __forceinline__ K64AFrag k64_a_frag(int lane, int wm) {
  K64AFrag f;
  const int x = (lane / 16) ^ (lane % 8);
#pragma unroll
  for (int m = 0; m < 4; ++m) f.xo[m] = uint32_t((x ^ (2 * m)) << 4);
  f.a_ld = uint32_t((wm * Tiling::kWM + lane % 16) * Tiling::kARow);
  return f;
}

// A thread's share of a K tile, fixed for the kernel: piece pa of A rows ra + 32 i (i < 4)
// and piece pb of B rows kb + kBStep i (i < 8), kBStep = kThreads / (pieces per B row), at
// the same swizzled place in every stage.
template <class T>
struct K64Copy {
  int pa, pb, kb, col0;
  int a_dst, b_dst;    // byte offsets in a stage (+ i * 32 rows of A, + i * kBStep rows of B)
  size_t a_rows32;     // 32 rows of A, in elements
  const T* a_src;      // row ra at k = 0 (dereferenced only inside A)
  const T* b_src;      // row kb at k = 0 (dereferenced only inside B)
  unsigned a_rows_in;  // bit i: row ra + 32 i is inside A
  bool b_col_in;       // the piece's first column is inside B
};

// Fills c for thread tid of the block whose tile starts at (row0, col0); b_swizzle(kb): the
// XOR the step applies to the piece index of B's row kb.
template <class Tiling, class T, class BSwizzle>
__device__ __forceinline__ void k64_copy_plan(K64Copy<T>& c, const T* A, const T* B, int M, int N, int K, int row0,
                                              int col0, int tid, BSwizzle b_swizzle) {
  constexpr int kElems = 16 / int(sizeof(T)), kBPieces = Tiling::kBRow / 16;
  const int pa = tid % 8, ra = tid / 8, pb = tid % kBPieces, kb = tid / kBPieces;
  c.pa = pa, c.pb = pb, c.kb = kb, c.col0 = col0;
  c.a_dst = ra * Tiling::kARow + ((pa ^ (ra % 8)) << 4);
  c.b_dst = kb * Tiling::kBRow + ((pb ^ b_swizzle(kb)) << 4);
  c.a_rows32 = size_t(32) * K;
  c.a_src = A + size_t(row0 + ra) * K + pa * kElems;
  c.b_src = B + size_t(kb) * N + col0 + pb * kElems;
  unsigned a_rows_in = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) a_rows_in |= unsigned(row0 + ra + 32 * i < M) << i;
  c.a_rows_in = a_rows_in;
  c.b_col_in = col0 + pb * kElems < N;
}

// The K tile that starts at k0 into the stage at sA_stage, sB_stage. kAsync: 16-byte
// cp.async with zero fill; else element by element into the same layout, zeros outside.
template <class Tiling, bool kAsync, class T>
__device__ __forceinline__ void k64_load_tile(const K64Copy<T>& c, unsigned char* sA_stage, unsigned char* sB_stage,
                                              const T* A, const T* B, int N, int K, int k0) {
  constexpr int kElems = 16 / int(sizeof(T)), kBStep = Tiling::kThreads / (Tiling::kBRow / 16);
  constexpr int kARow = Tiling::kARow, kBRow = Tiling::kBRow;
  unsigned char* da = sA_stage + c.a_dst;
  unsigned char* db = sB_stage + c.b_dst;
  const int ka = k0 + c.pa * kElems;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const bool row_in = (c.a_rows_in >> i) & 1u;
    const T* src = c.a_src + i * c.a_rows32 + k0;
    if constexpr (kAsync) {
      const bool in = row_in && ka < K;
      wb::ptx::cp_async_16(da + i * 32 * kARow, in ? src : A, in);
    } else {
      T* d = reinterpret_cast<T*>(da + i * 32 * kARow);
#pragma unroll
      for (int e = 0; e < kElems; ++e) d[e] = (row_in && ka + e < K) ? src[e] : zero<T>();
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int k = k0 + c.kb + kBStep * i;
    const T* src = c.b_src + size_t(k0 + kBStep * i) * N;
    if constexpr (kAsync) {
      const bool in = c.b_col_in && k < K;
      wb::ptx::cp_async_16(db + i * kBStep * kBRow, in ? src : B, in);
    } else {
      T* d = reinterpret_cast<T*>(db + i * kBStep * kBRow);
      const int col = c.col0 + c.pb * kElems;
#pragma unroll
      for (int e = 0; e < kElems; ++e) d[e] = (k < K && col + e < N) ? src[e] : zero<T>();
    }
  }
}

// The main loop over `tiles` K tiles: v5's (wb::gemm::mma_pipeline), but the stage being
// read is kept as two shared addresses (a_rd, b_rd) that advance once per tile:
//   load_tile(s, k0)                       the K tile at k0 into stage s (the commit is here)
//   load_frags(a, b, a_stage, b_stage, kk) step kk's fragments of the stage at those addresses
//   mma(a, b)                              the tensor-core work of one step on one set
template <class Tiling, class AFrag, class BFrag, class LoadTile, class LoadFrags, class Mma>
__device__ __forceinline__ void k64_pipeline(int tiles, uint32_t sA32, uint32_t sB32, AFrag (&af)[2], BFrag (&bf)[2],
                                             LoadTile&& load_tile, LoadFrags&& load_frags, Mma&& mma) {
  using namespace wb::ptx;
  constexpr int kStages = Tiling::kStages, kKK = Tiling::kKK, kBK = Tiling::kBK;
  // Fill every stage (one commit group each, empty past the end); wait for tile 0.
#pragma unroll
  for (int s = 0; s < kStages; ++s) {
    if (s < tiles) load_tile(s, s * kBK);
    cp_async_commit();
  }
  cp_async_wait<kStages - 1>();
  __syncthreads();

  int rd = 0;  // the stage of tile t
  uint32_t a_rd = sA32, b_rd = sB32;
  load_frags(af[0], bf[0], a_rd, b_rd, 0);

  for (int t = 0; t < tiles; ++t) {
#pragma unroll
    for (int kk = 0; kk < kKK; ++kk) {
      if (kk == kKK - 1) {
        // Tile t's last fragments were read at kk - 1: after the barrier its stage takes tile
        // t + kStages. Groups committed so far: kStages + t; tile t + 1 (group t + 1) must be
        // in, so at most kStages - 2 may still fly.
        cp_async_wait<kStages - 2>();
        __syncthreads();
        if (t + kStages < tiles) load_tile(rd, (t + kStages) * kBK);
        cp_async_commit();
        rd = rd + 1 == kStages ? 0 : rd + 1;
        a_rd = sA32 + rd * Tiling::kAStage;
        b_rd = sB32 + rd * Tiling::kBStage;
        if (t + 1 < tiles) load_frags(af[(kk + 1) % 2], bf[(kk + 1) % 2], a_rd, b_rd, 0);
      } else {
        load_frags(af[(kk + 1) % 2], bf[(kk + 1) % 2], a_rd, b_rd, kk + 1);
      }
      mma(af[kk % 2], bf[kk % 2]);
    }
  }
  cp_async_wait<0>();  // only empty groups remain, but nothing may write the buffers below
  __syncthreads();     // every warp is done reading the stages
}

// v7's and v8's launch: nothing for an empty D; fallback() on a GPU that cannot give a block
// Tiling::kSmem bytes of shared memory (sm_86 and sm_89 stop at 99 KB); else one block of
// Tiling::kThreads per (BM x BN) tile of D, kAligned's kernel when `aligned` (16-byte
// cp.async), kUnaligned's otherwise (element by element).
template <class Tiling, auto kAligned, auto kUnaligned, class In, class Out, class Fallback>
void k64_launch(bool aligned, Fallback&& fallback, int M, int N, int K, const In* A, const In* B, const Out* C, Out* D,
                cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  static const bool fits = wb::query_device().smem_per_block_optin >= Tiling::kSmem;
  if (!fits) {
    fallback();
    return;
  }
  const long long blocks = (long long)((M + Tiling::kBM - 1) / Tiling::kBM) * ((N + Tiling::kBN - 1) / Tiling::kBN);
  const auto grid = static_cast<unsigned>(blocks);
  if (aligned) {
    wb::gemm::launch_with_smem<kAligned>(grid, Tiling::kThreads, Tiling::kSmem, stream, M, N, K, A, B, C, D);
  } else {
    wb::gemm::launch_with_smem<kUnaligned>(grid, Tiling::kThreads, Tiling::kSmem, stream, M, N, K, A, B, C, D);
  }
}

}  // namespace ch05::solution
