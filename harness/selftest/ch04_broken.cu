// Harness self-tests for chapter 4: SGEMMs with the mistakes learners make. Each must be
// rejected by the same checks the learner's kernels meet, with a message naming the fault.
// If one of these tests fails, the harness has gone soft, not the kernel.
//
// The broken kernels never touch memory outside the test's allocations (they would fault
// and take the process's CUDA context with them): each is wrong in its values, or leaves
// elements unwritten, or writes into C's padding, never out of bounds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ch04.cuh"
#include "check.cuh"
#include "cuda/errors.cuh"
#include "cuda/gtest_support.cuh"

namespace ch04 {
namespace {

using ::testing::HasSubstr;

__device__ __forceinline__ void put(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// --- Right only on tile multiples ----------------------------------------------------------
// A shared-memory tiled SGEMM without edge handling: the grid is rounded down (M / T, N / T)
// and K is walked in whole tiles only. Every access stays inside the matrices, so nothing
// faults: the last partial rows and columns of C are never written and K's tail is dropped.
constexpr int kT = 16;

__global__ void whole_tiles_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                   float beta, float* C, int ldc) {
  __shared__ float a[kT][kT], b[kT][kT];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kT + ty, col = blockIdx.x * kT + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 + kT <= K; k0 += kT) {
    a[ty][tx] = A[static_cast<size_t>(row) * lda + k0 + tx];
    b[ty][tx] = B[static_cast<size_t>(k0 + ty) * ldb + col];
    __syncthreads();
    for (int k = 0; k < kT; ++k) acc += a[ty][k] * b[k][tx];
    __syncthreads();
  }
  put(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}
void whole_tiles(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                 float* C, int ldc, cudaStream_t s) {
  const dim3 grid(N / kT, M / kT);  // the bug: rounds down
  if (grid.x == 0 || grid.y == 0) return;
  whole_tiles_kernel<<<grid, dim3(kT, kT), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

// --- M and N swapped ------------------------------------------------------------------------
// Rows run to N and columns to M (and the grid follows the same mistake): right when
// M == N. The loads and stores are clamped to the allocations the checks make, so the
// mistake shows as wrong and unwritten elements instead of a fault.
__device__ __forceinline__ float at(const float* p, size_t i, size_t count) { return i < count ? p[i] : 0.0f; }

__global__ void swapped_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc, size_t a_count, size_t b_count, size_t c_count) {
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int row = blockIdx.y * 8 + threadIdx.y;
  if (row >= N || col >= M) return;  // the bug
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) {
    acc += at(A, static_cast<size_t>(row) * lda + p, a_count) * at(B, static_cast<size_t>(p) * ldb + col, b_count);
  }
  const size_t i = static_cast<size_t>(row) * ldc + col;
  if (i < c_count) put(C + i, acc, alpha, beta);
}
void swapped(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
             int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  const dim3 grid((M + 31) / 32, (N + 7) / 8);
  swapped_kernel<<<grid, dim3(32, 8), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                              static_cast<size_t>(M) * lda, static_cast<size_t>(K) * ldb,
                                              static_cast<size_t>(M) * ldc);
  WB_CHECK_LAUNCH();
}

// --- A race between loading a shared tile and using it -----------------------------------
// The __syncthreads() between storing the tiles and reading them is missing (kSync false).
// Races show only now and then when every warp runs at the same pace, so to make this one
// show every time, each warp but the first waits about 10 microseconds before loading its
// rows of the tiles: warp 0 then multiplies rows of B's tile that are not there yet.
// With kSync true the same kernel is right: the barrier alone makes the difference.
template <bool kSync>
__global__ void racy_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                            float beta, float* C, int ldc) {
  constexpr int T = 32;
  __shared__ float a[T][T], b[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;  // warp number == ty
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    if (ty != 0) {  // every warp but the first spins for about 10 microseconds
      const long long start = clock64();
      while (clock64() - start < 20000) {
      }
    }
    a[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<size_t>(row) * lda + k0 + tx] : 0.0f;
    b[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<size_t>(k0 + ty) * ldb + col] : 0.0f;
    if (kSync) __syncthreads();  // the bug when kSync is false
    for (int k = 0; k < T; ++k) acc += a[ty][k] * b[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) put(C + static_cast<size_t>(row) * ldc + col, acc, alpha, beta);
}
template <bool kSync>
void racy(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
          int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  const dim3 grid((N + 31) / 32, (M + 31) / 32);
  racy_kernel<kSync><<<grid, dim3(32, 32), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  WB_CHECK_LAUNCH();
}

// --- beta handled wrongly -------------------------------------------------------------------
// reads_c: always computes alpha * acc + beta * C, so with beta == 0 it reads C's NaN.
// ignores_beta: never reads C, so it is wrong whenever beta != 0.
template <bool kReadsC>
__global__ void beta_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                            float beta, float* C, int ldc) {
  const int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += A[static_cast<size_t>(row) * lda + p] * B[static_cast<size_t>(p) * ldb + col];
  float* c = C + static_cast<size_t>(row) * ldc + col;
  *c = kReadsC ? alpha * acc + beta * *c : alpha * acc;
}
template <bool kReadsC>
void beta_bug(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
              int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  beta_kernel<kReadsC><<<dim3((N + 31) / 32, (M + 7) / 8), dim3(32, 8), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta,
                                                                                 C, ldc);
  WB_CHECK_LAUNCH();
}

// --- Writes past the last column, into C's padding ---------------------------------------
// Each thread computes 4 neighbouring columns and stores all 4 whenever the first is inside
// C. Only used with padded C (ldc >= N + 3), so the stray stores land in the padding.
__global__ void four_wide_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                 float beta, float* C, int ldc) {
  const int col = (blockIdx.x * 32 + threadIdx.x) * 4, row = blockIdx.y * 8 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc[4] = {};
  for (int p = 0; p < K; ++p) {
    const float a = A[static_cast<size_t>(row) * lda + p];
    for (int c = 0; c < 4; ++c) acc[c] += col + c < N ? a * B[static_cast<size_t>(p) * ldb + col + c] : 0.0f;
  }
  for (int c = 0; c < 4; ++c) put(C + static_cast<size_t>(row) * ldc + col + c, acc[c], alpha, beta);  // the bug
}
void four_wide(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
               int ldc, cudaStream_t s) {
  if (M == 0 || N == 0) return;
  four_wide_kernel<<<dim3((N + 127) / 128, (M + 7) / 8), dim3(32, 8), 0, s>>>(M, N, K, alpha, A, lda, B, ldb, beta, C,
                                                                              ldc);
  WB_CHECK_LAUNCH();
}

void expect_rejected(const wb::Outcome& o, const std::string& fault) {
  EXPECT_EQ(o.kind, wb::Outcome::Kind::Wrong) << o.message;
  EXPECT_THAT(o.message, HasSubstr(fault));
}

TEST(Ch04Broken, RightOnlyOnTileMultiples) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_sgemm(&whole_tiles, {64, 48, 32}, rng));  // multiples of 16: the trap
  const auto o = check_sgemm(&whole_tiles, {65, 48, 32}, rng);   // one row past a tile
  expect_rejected(o, "48 unwritten");
  EXPECT_THAT(o.message, HasSubstr("(row 64, col 0): never written"));
  EXPECT_THAT(o.message, HasSubstr("ceiling division"));
  expect_rejected(check_sgemm(&whole_tiles, {64, 49, 32}, rng), "64 unwritten");  // one column past
  expect_rejected(check_sgemm(&whole_tiles, {64, 48, 33}, rng), "wrong of");      // K's tail dropped
  expect_rejected(check_sgemm(&whole_tiles, {7, 5, 3}, rng), "35 unwritten");     // smaller than one tile
}

TEST(Ch04Broken, MAndNSwapped) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_sgemm(&swapped, {96, 96, 40}, rng));  // right on squares: the trap
  const auto tall = check_sgemm(&swapped, {96, 64, 40}, rng);
  expect_rejected(tall, "unwritten");
  EXPECT_THAT(tall.message, HasSubstr("tile map"));
  expect_rejected(check_sgemm(&swapped, {64, 96, 40}, rng), "unwritten");
  expect_rejected(check_sgemm(&swapped, {96, 64, 40, 4, 1.0f, 0.5f}, rng), "wrong");
}

TEST(Ch04Broken, RaceBetweenLoadingAndUsingTheSharedTile) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const GemmArgs g{128, 96, 160};
  WB_EXPECT_PASS(check_sgemm(&racy<true>, g, rng));  // the barrier in place: right
  // Without it, at least one of three runs must be rejected (in practice all are).
  int rejected = 0;
  std::string message;
  for (int run = 0; run < 3; ++run) {
    const auto o = check_sgemm(&racy<false>, g, rng);
    EXPECT_NE(o.kind, wb::Outcome::Kind::Fault) << o.message;
    if (o.kind == wb::Outcome::Kind::Wrong) ++rejected, message = o.message;
  }
  EXPECT_GE(rejected, 1) << "a kernel that reads shared tiles before they are complete passed three times";
  EXPECT_THAT(message, HasSubstr("wrong of"));
}

TEST(Ch04Broken, ReadsCWhenBetaIsZero) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_sgemm(&beta_bug<true>, {70, 50, 30, 4, 1.0f, 0.5f}, rng));  // beta != 0: fine
  const auto o = check_sgemm(&beta_bug<true>, {70, 50, 30}, rng);
  expect_rejected(o, "3500 NaN/Inf");
  EXPECT_THAT(o.message, HasSubstr("with beta == 0, C is output only"));
}

TEST(Ch04Broken, IgnoresBeta) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_sgemm(&beta_bug<false>, {70, 50, 30}, rng));  // beta == 0: fine
  expect_rejected(check_sgemm(&beta_bug<false>, {70, 50, 30, 0, 1.0f, 0.75f}, rng), "wrong of");
}

TEST(Ch04Broken, WritesIntoThePaddingOfC) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  WB_EXPECT_PASS(check_sgemm(&four_wide, {33, 64, 20, 4, 1.0f, 0.0f}, rng));  // N % 4 == 0: nothing strays
  expect_rejected(check_sgemm(&four_wide, {33, 66, 20, 4, 1.0f, 0.0f}, rng), "into C's padding");
}

}  // namespace
}  // namespace ch04
