// What v7 (16-bit inputs, mma.sync.m16n8k16), v8 (INT8, m16n8k32) and their two-blocks-per-SM
// versions v12 and v13 share: the tiling (128-row block tiles of 64 x 64 warp tiles, 2 warps
// down and kBN / 64 across; stages whose rows of A are one 128-byte line), the per-thread copy
// plan with its addresses worked out once, the copy of one K tile into a stage, and the main
// loop that rotates the stage addresses held in registers; for the 16-bit steps, the 16-byte
// reads of C and writes of D of their staged epilogues.
// Each step keeps its fragment loads, its tensor-core step, B's swizzle and its epilogue.
#pragma once
#include <cstdint>
#include <type_traits>

#include "ch05.cuh"
#include "device/async_copy.cuh"

namespace ch05::solution {

// kElemBytes: 2 (FP16/BF16) or 1 (INT8); kOutLd: 4-byte values per staged output row;
// kBN_: the block tile's width (256: v7, v8, 8 warps; 128: v12, v13, 4 warps); kStages_: stages;
// kAPer_: pieces of one row of A a thread copies per stage (1 or 2, see below).
template <int kElemBytes, int kOutLd_, int kBN_ = 256, int kStages_ = 3, int kAPer_ = 1>
struct K64Tiling {
  static constexpr int kBM = 128, kBN = kBN_, kBK = 128 / kElemBytes, kStages = kStages_;
  static constexpr int kWarpsM = 2, kWarpsN = kBN / 64, kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // 64 x 64 warp tile
  // mma tiles per warp, k steps per stage (one step: 32 bytes of K)
  static constexpr int kMT = kWM / 16, kNT = kWN / 8, kKK = kBK * kElemBytes / 32;
  static constexpr int kARow = kBK * kElemBytes, kBRow = kBN * kElemBytes;  // bytes per row of a stage
  static constexpr int kAStage = kBM * kARow, kBStage = kBK * kBRow;        // 16 KB, 32 KB (kBN 128: 16 KB)
  static constexpr int kPipe = kStages * (kAStage + kBStage);               // 144 KB (kBN 128: 96 KB)
  // A thread's share of a stage: of A, kAPer pieces (kAThreads apart) of each of kAIters rows
  // kAStep apart, kAThreads threads sharing a row of 8 pieces; of B, kBIters pieces, rows
  // kBStep apart (kBPieces pieces per row). v7, v8 (8 warps): 1 piece of 4 rows of A. With 4
  // warps, 1 piece of 8 rows (v12) or 2 pieces of 4 rows (v13: the second piece of a row is
  // the same row pointer + 64 bytes, 4 row pointers instead of 8; what fits the registers).
  static constexpr int kAPer = kAPer_, kAThreads = 8 / kAPer, kAStep = kThreads / kAThreads, kAIters = kBM / kAStep;
  static constexpr int kBPieces = kBRow / 16, kBStep = kThreads / kBPieces, kBIters = kBK / kBStep;
  static constexpr int kOutLd = kOutLd_;
  static constexpr int kOutBytes = kBM * kOutLd * 4;  // the staged output tile (reuses the pipeline)
  static constexpr int kSmem = kPipe > kOutBytes ? kPipe : kOutBytes;
  static constexpr int kGroupM = 8;  // block rows launched together
  static_assert(kARow == 128, "rows of A are one 128-byte line: the XOR with row % 8 covers all 8 pieces");
  static_assert(kBRow % 128 == 0, "rows of B are whole 128-byte lines");
  static_assert(kWM == 64 && kWN == 64 && kKK == 4, "the offset tables cover 4 m tiles, 4 k steps, 4 column groups");
  static_assert(kBN % 64 == 0 && kThreads % kBPieces == 0, "whole warp tiles; whole rows of B per pass of the block");
  static_assert(kAThreads * kAPer == 8 && kBM % kAStep == 0 && kBK % kBStep == 0 && kAIters <= 32,
                "whole pieces of A and B per thread");
};

// A thread's share of a K tile, fixed for the kernel: pieces pa + kAThreads p (p < kAPer) of
// A rows ra + kAStep i (i < kAIters) and piece pb of B rows kb + kBStep i (i < kBIters), at
// the same swizzled place in every stage.
template <class T>
struct K64Copy {
  int pa, pb, kb, col0;
  int a_dst, b_dst;    // byte offsets in a stage (+ i * kAStep rows of A, + i * kBStep rows of B)
  size_t a_rows_step;  // kAStep rows of A, in elements
  const T* a_src;      // row ra at k = 0 (dereferenced only inside A)
  const T* b_src;      // row kb at k = 0 (dereferenced only inside B)
  unsigned a_rows_in;  // bit i: row ra + kAStep i is inside A
  bool b_col_in;       // the piece's first column is inside B
};

// Fills c for thread tid of the block whose tile starts at (row0, col0); b_swizzle(kb): the
// XOR the step applies to the piece index of B's row kb.
template <class Tiling, class T, class BSwizzle>
__device__ __forceinline__ void k64_copy_plan(K64Copy<T>& c, const T* A, const T* B, int M, int N, int K, int row0,
                                              int col0, int tid, BSwizzle b_swizzle) {
  constexpr int kElems = 16 / int(sizeof(T)), kBPieces = Tiling::kBPieces;
  const int pa = tid % Tiling::kAThreads, ra = tid / Tiling::kAThreads, pb = tid % kBPieces, kb = tid / kBPieces;
  c.pa = pa, c.pb = pb, c.kb = kb, c.col0 = col0;
  c.a_dst = ra * Tiling::kARow + ((pa ^ (ra % 8)) << 4);
  c.b_dst = kb * Tiling::kBRow + ((pb ^ b_swizzle(kb)) << 4);
  c.a_rows_step = size_t(Tiling::kAStep) * K;
  c.a_src = A + size_t(row0 + ra) * K + pa * kElems;
  c.b_src = B + size_t(kb) * N + col0 + pb * kElems;
  unsigned a_rows_in = 0;
#pragma unroll
  for (int i = 0; i < Tiling::kAIters; ++i) a_rows_in |= unsigned(row0 + ra + Tiling::kAStep * i < M) << i;
  c.a_rows_in = a_rows_in;
  c.b_col_in = col0 + pb * kElems < N;
}

// The K tile that starts at k0 into the stage at sA_stage, sB_stage. kAsync: 16-byte
// cp.async with zero fill; else element by element into the same layout, zeros outside.
template <class Tiling, bool kAsync, class T>
__device__ __forceinline__ void k64_load_tile(const K64Copy<T>& c, unsigned char* sA_stage, unsigned char* sB_stage,
                                              const T* A, const T* B, int N, int K, int k0) {
  constexpr int kElems = 16 / int(sizeof(T)), kAThreads = Tiling::kAThreads, kAStep = Tiling::kAStep;
  constexpr int kBStep = Tiling::kBStep;
  constexpr int kARow = Tiling::kARow, kBRow = Tiling::kBRow;
  unsigned char* db = sB_stage + c.b_dst;
#pragma unroll
  for (int p = 0; p < Tiling::kAPer; ++p) {
    // piece pa + kAThreads p (kAThreads a power of 2 above pa) is stored at (pa ^ (ra % 8)) ^ kAThreads p
    unsigned char* da = sA_stage + (c.a_dst ^ ((p * kAThreads) << 4));
    const int ka = k0 + (c.pa + p * kAThreads) * kElems;
#pragma unroll
    for (int i = 0; i < Tiling::kAIters; ++i) {
      const bool row_in = (c.a_rows_in >> i) & 1u;
      const T* src = c.a_src + i * c.a_rows_step + k0 + p * kAThreads * kElems;
      if constexpr (kAsync) {
        const bool in = row_in && ka < K;
        wb::ptx::cp_async_16(da + i * kAStep * kARow, in ? src : A, in);
      } else {
        T* d = reinterpret_cast<T*>(da + i * kAStep * kARow);
#pragma unroll
        for (int e = 0; e < kElems; ++e) d[e] = (row_in && ka + e < K) ? src[e] : zero<T>();
      }
    }
  }
#pragma unroll
  for (int i = 0; i < Tiling::kBIters; ++i) {
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

// 8 elements of Out (16 bytes for 16-bit types, 32 for FP32) to D, from FP32 values: the
// staged epilogue of the 16-bit steps (v7, v12) writes a row of D 8 values per thread.
template <class Out>
__device__ __forceinline__ void store8(Out* d, const float (&v)[8]) {
  if constexpr (std::is_same_v<Out, float>) {
    reinterpret_cast<float4*>(d)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(d)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    uint4 u;
    uint32_t* w = reinterpret_cast<uint32_t*>(&u);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (std::is_same_v<Out, __half>) {
        const __half2 h = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
        w[e] = *reinterpret_cast<const uint32_t*>(&h);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * e], v[2 * e + 1]);
        w[e] = *reinterpret_cast<const uint32_t*>(&h);
      }
    }
    *reinterpret_cast<uint4*>(d) = u;
  }
}

// v[e] += C[e] for 8 elements of C, read as 16-byte vectors.
template <class Out>
__device__ __forceinline__ void add8(float (&v)[8], const Out* c) {
  if constexpr (std::is_same_v<Out, float>) {
    const float4 x = reinterpret_cast<const float4*>(c)[0], y = reinterpret_cast<const float4*>(c)[1];
    v[0] += x.x, v[1] += x.y, v[2] += x.z, v[3] += x.w, v[4] += y.x, v[5] += y.y, v[6] += y.z, v[7] += y.w;
  } else {
    const uint4 u = *reinterpret_cast<const uint4*>(c);
    const Out* h = reinterpret_cast<const Out*>(&u);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] += to_acc<float>(h[e]);
  }
}

}  // namespace ch05::solution
