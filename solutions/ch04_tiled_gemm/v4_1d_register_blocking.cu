// v4 — 1-D register blocking: each thread computes TM = 8 elements of one column of C.
//
// What changes over v3: a block of 512 threads computes a 64 x 64 tile of C, walking K in
// steps of BK = 8. Each thread owns TM = 8 vertically adjacent elements of one column. For
// each k it reads B's value for its column once into a register and reuses it for its 8
// rows: 8 FMAs for 9 shared-memory loads (A's values are broadcasts: every thread of a warp
// is on the same rows), where v3 needed 2 loads per FMA.
//
// Arithmetic intensity: against global memory a 64 x 64 tile does 64*64*2 FLOPs per
// (64 + 64) * 4 bytes loaded per k: 16 FLOP/byte (v3: 8). Against shared memory: about one
// load per FMA, still the bottleneck; v5 blocks in both directions.
//
// From gemm_common.cuh: load_tiles_scalar (the two tiles, element by element), store_scaled,
// launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v4_1d_register_blocking,reference
#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "ladder.cuh"

namespace ch04::solution {
namespace {

template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__((BM / TM) * BN)
    blocking1d_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                      float* C, int ldc) {
  constexpr int kThreads = (BM / TM) * BN;
  static_assert(BM % TM == 0, "the thread columns must cover BM");
  static_assert(BN % 32 == 0, "a warp must lie on one row of thread columns (A reads are broadcasts)");
  static_assert(kThreads <= 1024, "at most 1024 threads per block");

  __shared__ float a_tile[BM][BK];  // (BM rows of C, BK of K)
  __shared__ float b_tile[BK][BN];  // (BK of K, BN cols of C)
  const int tid = threadIdx.x;
  const int tcol = tid % BN;  // this thread's column of the block tile
  const int trow = tid / BN;  // and its rows: trow * TM ... trow * TM + TM - 1
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles_scalar<BM, BN, BK, kThreads>(a_tile, b_tile, A, lda, B, ldb, M, N, K, row0, col0, k0, tid);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = b_tile[k][tcol];  // one load, reused TM times
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += a_tile[trow * TM + i][k] * b;
    }
    __syncthreads();
  }

  const int col = col0 + tcol;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + trow * TM + i;
    if (row < M && col < N) store_scaled(C + static_cast<size_t>(row) * ldc + col, acc[i], alpha, beta);
  }
}

}  // namespace

void v4_1d_register_blocking(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 8;
  launch_checked(blocking1d_kernel<kBM, kBN, kBK, kTM>, dim3(ceil_div(N, kBN), ceil_div(M, kBM)),
                 dim3((kBM / kTM) * kBN), 0, stream, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace ch04::solution
