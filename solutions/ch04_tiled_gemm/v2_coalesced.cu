// v2 — one thread per element of C, with threadIdx.x following the column.
//
// What changes over v1: only which index follows threadIdx.x. Now the 32 threads of a warp
// hold 32 neighbouring columns of one row of C: each load of B reads 32 neighbouring
// floats of one row (128 bytes, one coalesced transaction), the load of A is the same
// element for the whole warp (a broadcast), and the store of C is coalesced too. Same
// FLOPs, same instructions, several times faster: DRAM and L2 move whole 32-byte sectors,
// and v1 used 4 bytes of each.
//
// What still limits it: every FMA needs two loads (one from L1/L2 for A, one for B), 0.25
// FLOP per byte loaded per thread. The loads, not the FMAs, set the pace.
//
// From gemm_common.cuh: store_scaled and launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v2_coalesced,reference
#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "ladder.cuh"

namespace ch04::solution {
namespace {

template <int BX, int BY>
__global__ void __launch_bounds__(BX* BY) coalesced_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                                                           const float* B, int ldb, float beta, float* C, int ldc) {
  static_assert(BX % 32 == 0, "a warp should span whole rows: BX a multiple of 32");
  static_assert(BX * BY <= 1024, "at most 1024 threads per block");
  const int col = blockIdx.x * BX + threadIdx.x;  // x follows the column: a warp spans 32 columns of a row
  const int row = blockIdx.y * BY + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<size_t>(row) * lda;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += a[p] * B[static_cast<size_t>(p) * ldb + col];
  store_scaled(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}

}  // namespace

void v2_coalesced(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                  float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  constexpr int kBX = 32, kBY = 8;
  launch_checked(coalesced_kernel<kBX, kBY>, dim3(ceil_div(N, kBX), ceil_div(M, kBY)), dim3(kBX, kBY), 0, stream, M, N,
                 K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace ch04::solution
