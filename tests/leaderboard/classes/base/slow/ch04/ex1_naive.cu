// Fixture submission "slow", chapter 4, exercise 1: one thread per element of C, every operand from
// global memory (the first step of the ladder, as exercise 1 asks).
#include "ch04.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch04 {
namespace {

// One thread per element of C; x follows the columns, so a warp's loads of B and its
// stores to C are coalesced, and A's element is the same for the whole warp.
__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                   float beta, float* C, int ldc) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= M || j >= N) return;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += A[static_cast<size_t>(i) * lda + p] * B[static_cast<size_t>(p) * ldb + j];
  float& out = C[static_cast<size_t>(i) * ldc + j];
  out = beta == 0.0f ? alpha * acc : alpha * acc + beta * out;  // C is not read when beta = 0
}

}  // namespace

void student::sgemm_naive(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                          float beta, float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  const dim3 block(32, 8);
  const dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
  sgemm_naive_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

}  // namespace ch04
