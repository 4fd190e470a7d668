// v7 — warp tiling: the block's threads are arranged warp by warp, so that each warp owns a
// (WM x WN) tile of C and its lanes read their fragments without bank conflicts.
//
// What changes over v6 (same 128 x 128 x 8 block tile, 256 threads, 8 x 8 per thread):
//   * Three levels of tiles: the block's (BM x BN) tile is split into 8 warp tiles of
//     (WM x WN) = (64 x 32); the warp tile is covered by its 32 lanes, 8 x 4 of them, each
//     computing a (TM x TN) = (8 x 8) thread tile.
//   * A thread's 8 x 8 is not one contiguous block but 2 x 2 blocks of 4 x 4, spaced one
//     "lane sweep" apart (32 rows, 16 columns). For each k a lane reads float4 number
//     lane_m (and lane_m + 8) of A's row of the warp tile: the 8 distinct float4 a warp
//     reads are consecutive, 128 bytes, no bank conflict; same for B. v6 read float4 that
//     were 32 bytes apart (2-way conflicts).
//   * A's transposed tile gets 4 floats of padding per row, so the transposing stores of
//     neighbouring lanes land in different banks.
// Why this layout matters beyond conflicts: a warp's working set (WM + WN values of A and B
// per k) is small, the sub-partition's register file keeps it close, and the same warp
// tile structure is what tensor-core GEMMs use (chapter 5).
// What still costs: load, wait, compute, wait: the tile's global loads are not overlapped
// with the FMAs of the previous tile. v8 double-buffers.
//
// From gemm_common.cuh: load_tiles_vec4, register_tile_loop and outer_product (as v6),
// store_warp_tile (the thread's results to C), launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v7_warp_tiling,reference
#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "ladder.cuh"

namespace ch04::solution {
namespace {

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS>
__global__ void __launch_bounds__(THREADS)
    warptile_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                    float* C, int ldc, bool a_vec, bool b_vec, bool c_vec) {
  using Tiling = WarpTiling<BM, BN, BK, WM, WN, TM, TN, THREADS>;  // the tile rules, checked
  constexpr int kLanesN = Tiling::kLanesN;                         // lanes across the warp tile
  constexpr int kSweepM = Tiling::kSweepM;                         // rows covered by one float4 from every lane row
  constexpr int kSweepN = Tiling::kSweepN;  // columns covered by one float4 from every lane column
  constexpr int kPad = 4;

  __shared__ __align__(16) float a_tile[BK][BM + kPad];  // A's (BM, BK) tile, transposed and padded
  __shared__ __align__(16) float b_tile[BK][BN];         // (BK of K, BN cols of C)

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / (BN / WN), warp_n = warp % (BN / WN);
  const int lane_m = lane / kLanesN, lane_n = lane % kLanesN;
  // Rows of this thread's tile: m_base + i * kSweepM + (0..3); columns n_base + j * kSweepN + (0..3).
  const int m_base = warp_m * WM + lane_m * 4;
  const int n_base = warp_n * WN + lane_n * 4;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a_reg[TM], b_reg[TN];
  // Per k: the thread's float4s of A and B, one lane sweep apart (consecutive across the warp).
  const auto load_regs = [&](int k) {
#pragma unroll
    for (int i = 0; i < TM / 4; ++i) {
      const float4 v = *reinterpret_cast<const float4*>(&a_tile[k][m_base + i * kSweepM]);
      a_reg[4 * i + 0] = v.x, a_reg[4 * i + 1] = v.y, a_reg[4 * i + 2] = v.z, a_reg[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN / 4; ++j) {
      const float4 v = *reinterpret_cast<const float4*>(&b_tile[k][n_base + j * kSweepN]);
      b_reg[4 * j + 0] = v.x, b_reg[4 * j + 1] = v.y, b_reg[4 * j + 2] = v.z, b_reg[4 * j + 3] = v.w;
    }
  };
  const auto load_tiles = [&](int k0) {
    load_tiles_vec4<BM, BN, BK, THREADS>(a_tile, b_tile, A, lda, B, ldb, M, N, K, row0, col0, k0, tid, a_vec, b_vec);
  };
  register_tile_loop<BK>(K, acc, a_reg, b_reg, load_tiles, load_regs);

  // acc[4 * i + r][4 * j + c] is C[row0 + m_base + i * kSweepM + r][col0 + n_base + j * kSweepN + c].
  store_warp_tile<TM, TN, kSweepM, kSweepN>(acc, C, ldc, M, N, row0 + m_base, col0 + n_base, c_vec, alpha, beta);
}

}  // namespace

void v7_warp_tiling(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                    float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  constexpr int kBM = 128, kBN = 128, kBK = 8, kWM = 64, kWN = 32, kTM = 8, kTN = 8, kThreads = 256;
  launch_checked(warptile_kernel<kBM, kBN, kBK, kWM, kWN, kTM, kTN, kThreads>, dim3(ceil_div(N, kBN), ceil_div(M, kBM)),
                 dim3(kThreads), 0, stream, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, vector_ok(A, lda),
                 vector_ok(B, ldb), vector_ok(C, ldc));
}

}  // namespace ch04::solution
