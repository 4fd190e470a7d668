// Small pieces every step of the chapter 4 ladder shares: ceiling division, alignment
// tests, guarded float4 loads, the alpha/beta epilogue and the checked launch; then the
// pieces a step takes unchanged from the one before it (each says which steps use it).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "device/math.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"

namespace ch04::solution {

using wb::ceil_div;  // grids: harness/device/math.cuh

using wb::aligned16;  // harness/device/vec.cuh

// float4 access to a matrix is allowed when its base is 16-byte aligned and its row
// stride is a multiple of 4 floats: then every row starts 16-byte aligned too.
inline bool vector_ok(const void* base, int ld) { return aligned16(base) && ld % 4 == 0; }

// C[i] = alpha * acc + beta * C[i]; C is not read when beta == 0 (it may hold NaN).
__device__ __forceinline__ void store_scaled(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// Elements [col, col + 4) of a row that has `width` elements, zeros past the end. One
// float4 load when `vec` (the row is 16-byte aligned and col % 4 == 0) and all four
// exist; element by element otherwise.
__device__ __forceinline__ float4 load_row4(const float* row, int col, int width, bool vec) {
  if (vec && col + 3 < width) return *reinterpret_cast<const float4*>(row + col);
  float4 v;
  v.x = col + 0 < width ? row[col + 0] : 0.0f;
  v.y = col + 1 < width ? row[col + 1] : 0.0f;
  v.z = col + 2 < width ? row[col + 2] : 0.0f;
  v.w = col + 3 < width ? row[col + 3] : 0.0f;
  return v;
}

// Writes [col, col + 4) of a row of C that has `width` elements: one float4 access when
// `vec` and all four exist, element by element otherwise.
__device__ __forceinline__ void store_row4(float* row, int col, int width, bool vec, float4 acc, float alpha,
                                           float beta) {
  if (vec && col + 3 < width) {
    float4* p = reinterpret_cast<float4*>(row + col);
    float4 out = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
    if (beta != 0.0f) {
      const float4 old = *p;
      out.x += beta * old.x;
      out.y += beta * old.y;
      out.z += beta * old.z;
      out.w += beta * old.w;
    }
    *p = out;
    return;
  }
  if (col + 0 < width) store_scaled(row + col + 0, acc.x, alpha, beta);
  if (col + 1 < width) store_scaled(row + col + 1, acc.y, alpha, beta);
  if (col + 2 < width) store_scaled(row + col + 2, acc.z, alpha, beta);
  if (col + 3 < width) store_scaled(row + col + 3, acc.w, alpha, beta);
}

// Launches `kernel` on `stream` with `smem` bytes of dynamic shared memory and checks the
// launch: the last lines of every step's launcher.
template <class... Params, class... Args>
void launch_checked(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args... args) {
  kernel<<<grid, block, smem, stream>>>(args...);
  WB_CHECK_LAUNCH();
}

// --- pieces of the kernels --------------------------------------------------------------

// The (BM, BK) tile of A at (row0, k0) and the (BK, BN) tile of B at (k0, col0), element by
// element, zeros outside the matrices (v4, v5). Consecutive threads take consecutive k of
// a row of A and consecutive columns of B.
template <int BM, int BN, int BK, int THREADS>
__device__ __forceinline__ void load_tiles_scalar(float (&a_tile)[BM][BK], float (&b_tile)[BK][BN], const float* A,
                                                  int lda, const float* B, int ldb, int M, int N, int K, int row0,
                                                  int col0, int k0, int tid) {
  static_assert((BM * BK) % THREADS == 0 && (BK * BN) % THREADS == 0,
                "every thread loads the same number of elements of each tile");
  constexpr int kALoads = BM * BK / THREADS, kBLoads = BK * BN / THREADS;
#pragma unroll
  for (int l = 0; l < kALoads; ++l) {
    const int i = tid + l * THREADS, r = i / BK, c = i % BK;
    const int gr = row0 + r, gk = k0 + c;
    a_tile[r][c] = (gr < M && gk < K) ? A[static_cast<size_t>(gr) * lda + gk] : 0.0f;
  }
#pragma unroll
  for (int l = 0; l < kBLoads; ++l) {
    const int i = tid + l * THREADS, r = i / BN, c = i % BN;
    const int gk = k0 + r, gc = col0 + c;
    b_tile[r][c] = (gk < K && gc < N) ? B[static_cast<size_t>(gk) * ldb + gc] : 0.0f;
  }
}

// The same tiles by float4 (v6, v7): A's tile stored transposed, (BK, ALD >= BM), B's as
// it is; load_row4 falls back to single elements where a float4 is not allowed.
template <int BM, int BN, int BK, int THREADS, int ALD>
__device__ __forceinline__ void load_tiles_vec4(float (&a_tile)[BK][ALD], float (&b_tile)[BK][BN], const float* A,
                                                int lda, const float* B, int ldb, int M, int N, int K, int row0,
                                                int col0, int k0, int tid, bool a_vec, bool b_vec) {
  constexpr int kALoads = BM * BK / 4 / THREADS, kBLoads = BK * BN / 4 / THREADS;
  const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int l = 0; l < kALoads; ++l) {  // float4 number f of the tile: row f / (BK/4), k (f % (BK/4)) * 4
    const int f = tid + l * THREADS, r = f / (BK / 4), c = (f % (BK / 4)) * 4;
    const int gr = row0 + r;
    const float4 v = gr < M ? load_row4(A + static_cast<size_t>(gr) * lda, k0 + c, K, a_vec) : zero4;
    a_tile[c + 0][r] = v.x;  // transposed on the way in
    a_tile[c + 1][r] = v.y;
    a_tile[c + 2][r] = v.z;
    a_tile[c + 3][r] = v.w;
  }
#pragma unroll
  for (int l = 0; l < kBLoads; ++l) {
    const int f = tid + l * THREADS, r = f / (BN / 4), c = (f % (BN / 4)) * 4;
    const int gk = k0 + r;
    const float4 v = gk < K ? load_row4(B + static_cast<size_t>(gk) * ldb, col0 + c, N, b_vec) : zero4;
    *reinterpret_cast<float4*>(&b_tile[r][c]) = v;
  }
}

// acc += a * b^T: the TM x TN products of one k (v5, v6, v7).
template <int TM, int TN>
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
  }
}

// The main loop of v5, v6 and v7, over the (BK)-deep tiles of K: load_tiles(k0) fills the
// shared tiles at k0, a barrier, then for each k of the tile load_regs(k) reads the thread's
// TM values of A and TN values of B into a_reg and b_reg, and their outer product is added
// to acc; a barrier before the next tile overwrites the shared tiles. The steps differ only
// in how they load the tiles and the registers.
template <int BK, int TM, int TN, class LoadTiles, class LoadRegs>
__device__ __forceinline__ void register_tile_loop(int K, float (&acc)[TM][TN], float (&a_reg)[TM], float (&b_reg)[TN],
                                                   LoadTiles&& load_tiles, LoadRegs&& load_regs) {
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles(k0);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      load_regs(k);
      outer_product(acc, a_reg, b_reg);
    }
    __syncthreads();
  }
}

// The rules of a warp-tiled kernel's tiles (v7, v8), checked where the kernel is
// instantiated, and the lane layout they give: kLanesN lanes across the warp tile; a
// thread's float4 rows are kSweepM apart, its float4 columns kSweepN apart.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS>
struct WarpTiling {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  static_assert(BM % WM == 0 && BN % WN == 0 && (BM / WM) * (BN / WN) == THREADS / 32,
                "the warp tiles must cover the block tile exactly once");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4 x 4 float4 blocks");
  static_assert(WM % TM == 0 && WN % TN == 0 && (WM / TM) * (WN / TN) == 32,
                "the 32 lanes must cover the warp tile exactly once");
  static_assert(BK % 4 == 0 && (BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0,
                "every thread loads the same number of float4 of each tile");
  static constexpr int kLanesN = WN / TN;
  static constexpr int kSweepM = 4 * (WM / TM);
  static constexpr int kSweepN = 4 * kLanesN;
};

// A warp-tiled thread's TM x TN results to C (v7, v8): acc[4 * i + r][4 * j + c] is
// C[row_base + i * SWEEP_M + r][col_base + j * SWEEP_N + c], written a float4 at a time.
template <int TM, int TN, int SWEEP_M, int SWEEP_N>
__device__ __forceinline__ void store_warp_tile(const float (&acc)[TM][TN], float* C, int ldc, int M, int N,
                                                int row_base, int col_base, bool c_vec, float alpha, float beta) {
#pragma unroll
  for (int i = 0; i < TM / 4; ++i) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = row_base + i * SWEEP_M + r;
      if (row >= M) continue;
      float* c_row = C + static_cast<size_t>(row) * ldc;
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const float* a = &acc[4 * i + r][4 * j];
        store_row4(c_row, col_base + j * SWEEP_N, N, c_vec, make_float4(a[0], a[1], a[2], a[3]), alpha, beta);
      }
    }
  }
}

}  // namespace ch04::solution
