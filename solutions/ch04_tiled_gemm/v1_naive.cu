// v1 — one thread per element of C: the plain answer, and the slowest.
//
// Thread (row, col) computes the dot product of row `row` of A and column `col` of B.
// Here threadIdx.x follows the row, the natural-looking but wrong choice: the 32 threads of
// a warp handle 32 different rows, so each load of A touches 32 different rows (32 memory
// transactions where one would do), and each store of C too. B's element is the same for
// the whole warp (a broadcast). Arithmetic intensity: 2 FLOPs per 8 bytes loaded, 0.25
// FLOP/byte before caches help: the kernel waits on memory, far from the FP32 peak.
//
// From gemm_common.cuh: store_scaled (the alpha/beta epilogue) and launch_checked.
//
// Run: build/ch04/bin/ch04_bench --impl=v1_naive,reference
#include "runtime/errors.cuh"
#include "gemm_common.cuh"
#include "ladder.cuh"

namespace ch04::solution {
namespace {

template <int BX, int BY>
__global__ void __launch_bounds__(BX* BY) naive_kernel(int M, int N, int K, float alpha, const float* A, int lda,
                                                       const float* B, int ldb, float beta, float* C, int ldc) {
  static_assert(BX * BY <= 1024, "at most 1024 threads per block");
  const int row = blockIdx.x * BX + threadIdx.x;  // x follows the row: a warp spans 32 rows
  const int col = blockIdx.y * BY + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<size_t>(row) * lda;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += a[p] * B[static_cast<size_t>(p) * ldb + col];
  store_scaled(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}

}  // namespace

void v1_naive(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
              int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  constexpr int kBX = 32, kBY = 8;
  launch_checked(naive_kernel<kBX, kBY>, dim3(ceil_div(M, kBX), ceil_div(N, kBY)), dim3(kBX, kBY), 0, stream, M, N, K,
                 alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace ch04::solution
