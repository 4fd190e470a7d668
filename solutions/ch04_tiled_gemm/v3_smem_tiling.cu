// v3 — shared-memory tiling: each element loaded from global memory is used TILE times.
//
// What changes over v2: a block of TILE x TILE threads computes a TILE x TILE tile of C.
// It walks along K one tile at a time; every thread copies one element of A's tile and one
// of B's into shared memory, the block waits, and each thread does TILE multiply-adds
// reading only shared memory. Global traffic per FMA drops by TILE (32x): per step of K a
// block loads 2 * TILE^2 floats (8 KB) for 2 * TILE^3 FLOPs, so the arithmetic intensity
// against L2/DRAM goes from 0.25 to TILE / 4 = 8 FLOP per byte.
//
// What limits it now: shared memory. Each FMA still needs two shared-memory loads (A's
// value is a broadcast, B's a conflict-free row read), so the LSU pipe, not the FMA pipe,
// is busy: at best about one FMA per two shared loads.
//
// Edges: past the matrix the tiles hold zeros (so the multiply-adds add nothing) and only
// elements inside C are stored. No thread returns early: every thread must reach both
// __syncthreads() in every iteration.
//
// From gemm_common.cuh: store_scaled and launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v3_smem_tiling,reference
#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "ladder.cuh"

namespace ch04::solution {
namespace {

template <int TILE>
__global__ void __launch_bounds__(TILE* TILE) smem_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                                                          const float* B, int ldb, float beta, float* C, int ldc) {
  static_assert(TILE % 32 == 0 || 32 % TILE == 0, "TILE should align with warps");
  static_assert(TILE * TILE <= 1024, "one thread per element of the tile: at most 1024 threads");
  __shared__ float a_tile[TILE][TILE];  // (TILE rows of C, TILE of K)
  __shared__ float b_tile[TILE][TILE];  // (TILE of K, TILE cols of C)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // Thread (ty, tx) loads A[row][k0 + tx] and B[k0 + ty][col]: both coalesced along x.
    a_tile[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<size_t>(row) * lda + k0 + tx] : 0.0f;
    b_tile[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<size_t>(k0 + ty) * ldb + col] : 0.0f;
    __syncthreads();  // the tiles are complete
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += a_tile[ty][k] * b_tile[k][tx];
    __syncthreads();  // everyone is done with the tiles before they are overwritten
  }
  if (row < M && col < N) store_scaled(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}

}  // namespace

void v3_smem_tiling(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                    float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  constexpr int kTile = 32;
  launch_checked(smem_kernel<kTile>, dim3(ceil_div(N, kTile), ceil_div(M, kTile)), dim3(kTile, kTile), 0, stream, M, N,
                 K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace ch04::solution
