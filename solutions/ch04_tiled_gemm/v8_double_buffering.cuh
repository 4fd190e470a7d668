// v8's kernel template, shared by its launcher (v8_double_buffering.cu), the compiled
// configurations (v8_configs.cu) and the autotuner (tune/autotune.cu). The header comment
// of v8_double_buffering.cu explains the design.
#pragma once
#include <cstdint>
#include <stdexcept>

#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "sgemm_config.h"

namespace ch04::solution {

// How many blocks the compiler must fit on one SM (the second __launch_bounds__ value),
// from an estimate of the registers a thread needs: the accumulators, one k's fragments of
// A and B, the prefetched float4 of the next tile, and about 40 for addresses and indices.
// The estimate is rounded up to 128 (two 256-thread blocks per SM), 168 or 255 registers,
// so that the compiler neither spills nor starves the SM of warps. The default
// configuration lands exactly on 128 registers with no spill (check with -Xptxas -v).
constexpr int v8_min_blocks(int threads, int tm, int tn, int a_loads, int b_loads) {
  const int estimate = tm * tn + tm + tn + 4 * (a_loads + b_loads) + 40;
  const int regs = estimate <= 128 ? 128 : estimate <= 168 ? 168 : 255;
  const int blocks = 65536 / (threads * regs);
  return blocks < 1 ? 1 : blocks;
}

// Consecutive blocks walk down a column of GROUP block rows before moving right, so the
// blocks resident at one time share A's row panels and B's column panels in L2.
constexpr int kV8GroupRows = 8;

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int PF>
__global__ void __launch_bounds__(THREADS, v8_min_blocks(THREADS, TM, TN, BM* BK / 4 / THREADS, BK* BN / 4 / THREADS))
    v8_kernel(int M, int N, int K, float alpha, const float* __restrict__ A, int lda, const float* __restrict__ B,
              int ldb, float beta, float* C, int ldc, bool a_vec, bool b_vec, bool c_vec) {
  // The same conditions as sgemm_config_problem(), checked where they matter: v7's tile
  // rules (WarpTiling), and two of v8's own.
  using Tiling = WarpTiling<BM, BN, BK, WM, WN, TM, TN, THREADS>;
  static_assert(TM * TN <= 128, "more than 128 accumulators per thread would spill");
  static_assert(2 * BK * ((BM + kSgemmAPad) + BN) * 4 <= kSgemmSmemLimit, "at most 64 KB of shared memory");

  constexpr int kLanesN = Tiling::kLanesN;
  constexpr int kSweepM = Tiling::kSweepM;
  constexpr int kSweepN = Tiling::kSweepN;
  constexpr int kALoads = BM * BK / 4 / THREADS, kBLoads = BK * BN / 4 / THREADS;

  // Two buffers of each tile: while the FMAs read one, the next tile is stored into the other.
  //   a_tile[2][BK][BM + pad]   A's (BM, BK) tile, transposed, padded
  //   b_tile[2][BK][BN]         (BK of K, BN cols of C)
  // Dynamic shared memory (the launcher opts in above 48 KB), viewed as these arrays.
  extern __shared__ __align__(16) float v8_smem[];
  auto a_tile = reinterpret_cast<float(*)[BK][BM + kSgemmAPad]>(v8_smem);
  auto b_tile = reinterpret_cast<float(*)[BK][BN]>(v8_smem + 2 * BK * (BM + kSgemmAPad));

  // Which tile of C: block rows in groups of kV8GroupRows, column by column within a group.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = kV8GroupRows * tiles_n;
  const int group = blockIdx.x / per_group, in_group = blockIdx.x % per_group;
  const int first_m = group * kV8GroupRows;
  const int group_rows = min(tiles_m - first_m, kV8GroupRows);
  const int row0 = (first_m + in_group % group_rows) * BM;
  const int col0 = (in_group / group_rows) * BN;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / (BN / WN), warp_n = warp % (BN / WN);
  const int lane_m = lane / kLanesN, lane_n = lane % kLanesN;
  const int m_base = warp_m * WM + lane_m * 4;  // rows m_base + i * kSweepM + (0..3)
  const int n_base = warp_n * WN + lane_n * 4;  // cols n_base + j * kSweepN + (0..3)
  const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  // This thread's float4 of each tile: A's row a_r[l], k offset a_c[l]; B's k offset b_r[l], column b_c[l].
  int a_r[kALoads], a_c[kALoads], b_r[kBLoads], b_c[kBLoads];
#pragma unroll
  for (int l = 0; l < kALoads; ++l) {
    const int f = tid + l * THREADS;
    a_r[l] = f / (BK / 4);
    a_c[l] = (f % (BK / 4)) * 4;
  }
#pragma unroll
  for (int l = 0; l < kBLoads; ++l) {
    const int f = tid + l * THREADS;
    b_r[l] = f / (BN / 4);
    b_c[l] = (f % (BN / 4)) * 4;
  }
  float4 a_next[kALoads], b_next[kBLoads];  // the next tile, on its way from global memory

  auto load_tile = [&](int k0) {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) {
      const int gr = row0 + a_r[l];
      a_next[l] = gr < M ? load_row4(A + static_cast<size_t>(gr) * lda, k0 + a_c[l], K, a_vec) : zero4;
    }
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) {
      const int gk = k0 + b_r[l];
      b_next[l] = gk < K ? load_row4(B + static_cast<size_t>(gk) * ldb, col0 + b_c[l], N, b_vec) : zero4;
    }
  };
  auto store_tile = [&](int buf) {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) {
      a_tile[buf][a_c[l] + 0][a_r[l]] = a_next[l].x;
      a_tile[buf][a_c[l] + 1][a_r[l]] = a_next[l].y;
      a_tile[buf][a_c[l] + 2][a_r[l]] = a_next[l].z;
      a_tile[buf][a_c[l] + 3][a_r[l]] = a_next[l].w;
    }
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) *reinterpret_cast<float4*>(&b_tile[buf][b_r[l]][b_c[l]]) = b_next[l];
  };

  float acc[TM][TN] = {};
  const int num_tiles = (K + BK - 1) / BK;
  if (num_tiles > 0) {
    load_tile(0);
    store_tile(0);
    __syncthreads();
  }
  for (int t = 0; t < num_tiles; ++t) {
    const int buf = t & 1;
    const bool more = t + 1 < num_tiles;
    if (more) load_tile((t + 1) * BK);  // in flight while the FMAs below run

    // One k's fragments: TM values of A's column k, TN values of B's row k. With PF = 1 two
    // sets alternate, and step k + 1's loads are issued before step k's FMAs, so the
    // shared-memory latency hides behind TM * TN FMAs instead of stalling them.
    float a_reg[PF + 1][TM], b_reg[PF + 1][TN];
    auto load_fragments = [&](int k, int set) {
#pragma unroll
      for (int i = 0; i < TM / 4; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(&a_tile[buf][k][m_base + i * kSweepM]);
        a_reg[set][4 * i + 0] = v.x, a_reg[set][4 * i + 1] = v.y, a_reg[set][4 * i + 2] = v.z,
                           a_reg[set][4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(&b_tile[buf][k][n_base + j * kSweepN]);
        b_reg[set][4 * j + 0] = v.x, b_reg[set][4 * j + 1] = v.y, b_reg[set][4 * j + 2] = v.z,
                           b_reg[set][4 * j + 3] = v.w;
      }
    };
    if constexpr (PF == 1) load_fragments(0, 0);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const int set = PF == 1 ? (k & 1) : 0;
      if constexpr (PF == 1) {
        if (k + 1 < BK) load_fragments(k + 1, set ^ 1);
      } else {
        load_fragments(k, 0);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a_reg[set][i], b_reg[set][j], acc[i][j]);
      }
    }
    // The other buffer was last read in iteration t - 1, and every thread has passed the
    // barrier that ended it: safe to overwrite. One barrier per tile.
    if (more) store_tile(buf ^ 1);
    __syncthreads();
  }

  store_warp_tile<TM, TN, kSweepM, kSweepN>(acc, C, ldc, M, N, row0 + m_base, col0 + n_base, c_vec, alpha, beta);
}

// Launches v8_kernel with one configuration; the SgemmFn signature, so configurations can
// sit in a table.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int THREADS, int PF>
void v8_launch(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
               int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  const int64_t blocks = int64_t{ceil_div(M, BM)} * ceil_div(N, BN);
  if (blocks > INT32_MAX) throw std::invalid_argument("sgemm: the matrix has more tiles than a grid can hold");
  const dim3 grid(static_cast<unsigned>(blocks));
  const dim3 block(THREADS);
  const auto kernel = v8_kernel<BM, BN, BK, WM, WN, TM, TN, THREADS, PF>;
  constexpr int smem = 2 * BK * ((BM + kSgemmAPad) + BN) * 4;
  if constexpr (smem > 48 * 1024) {
    // Above 48 KB a kernel must opt in, once per process (and per device it runs on).
    static const bool opted_in = [&] {
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      return true;
    }();
    (void)opted_in;
  }
  launch_checked(kernel, grid, block, smem, stream, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, vector_ok(A, lda),
                 vector_ok(B, ldb), vector_ok(C, ldc));
}

}  // namespace ch04::solution
