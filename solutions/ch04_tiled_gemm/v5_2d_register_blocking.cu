// v5 — 2-D register blocking: each thread computes an 8 x 8 block of C.
//
// What changes over v4: a block of 256 threads computes a 128 x 128 tile of C (BK = 8);
// each thread owns TM x TN = 8 x 8 elements in 64 registers. For each k it reads 8 values
// of A's column and 8 of B's row into registers and does their 64 products (an outer
// product): 64 FMAs for 16 shared-memory loads, 4 FMAs per load where v4 had about 1.
//
// Arithmetic intensity against global memory: a 128 x 128 tile does 128*128*2 FLOPs per
// (128 + 128) * 4 bytes per k: 32 FLOP/byte, well above the ridge point of any GPU, so the
// kernel can be compute bound. What still costs: the loads are scalar (one instruction per
// float), A's reads from shared memory are 2-way bank conflicts (two rows of threads per
// warp hit the same bank), and B's reads (8 consecutive floats per thread, threads 8 floats
// apart) conflict 4 ways. v6 fixes the loads.
//
// From gemm_common.cuh: load_tiles_scalar (v4's tile loads), register_tile_loop (the loop
// over K tiles: load, barrier, per k the registers and outer_product, the TM x TN FMAs of one
// k), store_scaled, launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v5_2d_register_blocking,reference
#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "ladder.cuh"

namespace ch04::solution {
namespace {

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    blocking2d_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                      float* C, int ldc) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert(BM % TM == 0 && BN % TN == 0, "the thread tiles must cover the block tile");
  static_assert(kThreads <= 1024, "at most 1024 threads per block");

  __shared__ float a_tile[BM][BK];  // (BM rows of C, BK of K)
  __shared__ float b_tile[BK][BN];  // (BK of K, BN cols of C)
  const int tid = threadIdx.x;
  const int tcol = tid % (BN / TN);  // this thread's TM x TN block: columns tcol * TN ...
  const int trow = tid / (BN / TN);  //                               rows    trow * TM ...
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  float acc[TM][TN] = {};
  float a_reg[TM], b_reg[TN];
  // Per k: the thread's column of A and row of B, scalar reads from the tiles.
  const auto load_regs = [&](int k) {
#pragma unroll
    for (int i = 0; i < TM; ++i) a_reg[i] = a_tile[trow * TM + i][k];
#pragma unroll
    for (int j = 0; j < TN; ++j) b_reg[j] = b_tile[k][tcol * TN + j];
  };
  const auto load_tiles = [&](int k0) {
    load_tiles_scalar<BM, BN, BK, kThreads>(a_tile, b_tile, A, lda, B, ldb, M, N, K, row0, col0, k0, tid);
  };
  register_tile_loop<BK>(K, acc, a_reg, b_reg, load_tiles, load_regs);

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + trow * TM + i;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tcol * TN + j;
      if (col < N) store_scaled(C + static_cast<size_t>(row) * ldc + col, acc[i][j], alpha, beta);
    }
  }
}

}  // namespace

void v5_2d_register_blocking(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
  launch_checked(blocking2d_kernel<kBM, kBN, kBK, kTM, kTN>, dim3(ceil_div(N, kBN), ceil_div(M, kBM)),
                 dim3((kBM / kTM) * (kBN / kTN)), 0, stream, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace ch04::solution
