// Harness self-tests for chapter 1: kernels with the mistakes learners make. Each must be
// rejected by the same checks the learner's kernels meet, with a message naming the fault.
// If one of these tests fails, the harness has gone soft, not the kernel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ch01.cuh"
#include "check.cuh"
#include "cuda/errors.cuh"
#include "cuda/gtest_support.cuh"

namespace ch01 {
namespace {

using ::testing::HasSubstr;

// Rounds the grid down instead of up: the last n % 256 elements are never written.
__global__ void drop_tail_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
void drop_tail(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  if (n / 256 == 0) return;
  drop_tail_kernel<<<n / 256, 256, 0, s>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

// x follows the row and y the column, with the grid still sized as if x were columns:
// every index is in range, and right, only when rows == cols.
__global__ void swapped_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                               int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= cols || col >= rows) return;
  c[static_cast<size_t>(row) * ldc + col] = a[static_cast<size_t>(row) * lda + col] + b[static_cast<size_t>(row) * ldb + col];
}
void swapped(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols, cudaStream_t s) {
  const dim3 block(32, 8);
  const dim3 grid((cols + 31) / 32, (rows + 7) / 8);
  swapped_kernel<<<grid, block, 0, s>>>(a, lda, b, ldb, c, ldc, rows, cols);
  WB_CHECK_LAUNCH();
}

// Forgets the last row of the image (loops y < height - 1).
__global__ void skip_last_row_kernel(const float* rgb, float* grey, int height, int width, int pitch) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height - 1) return;
  const size_t plane = static_cast<size_t>(height) * pitch, at = static_cast<size_t>(y) * pitch + x;
  grey[at] = kRedWeight * rgb[at] + kGreenWeight * rgb[plane + at] + kBlueWeight * rgb[2 * plane + at];
}
void skip_last_row(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t s) {
  const dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
  skip_last_row_kernel<<<grid, block, 0, s>>>(rgb, grey, height, width, pitch);
  WB_CHECK_LAUNCH();
}

// Divides by an element that can be zero (a / 0 - a / 0 = NaN) on every 100th element.
__global__ void writes_nan_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float zero = static_cast<float>(i % 100);
  c[i] = (i % 100 == 0) ? (a[i] / zero - a[i] / zero) : a[i] + b[i];
}
void writes_nan(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  writes_nan_kernel<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

// Writes one element too many in each row: right values, but it scribbles on the padding.
__global__ void spills_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= rows || col > cols) return;  // <= cols: one past the end of the row
  const size_t r = static_cast<size_t>(row);
  c[r * ldc + col] = col < cols ? a[r * lda + col] + b[r * ldb + col] : 0.0f;
}
void spills(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols, cudaStream_t s) {
  const dim3 block(32, 8), grid((cols + 32) / 32, (rows + 7) / 8);
  spills_kernel<<<grid, block, 0, s>>>(a, lda, b, ldb, c, ldc, rows, cols);
  WB_CHECK_LAUNCH();
}

void expect_rejected(const wb::Outcome& o, const std::string& fault) {
  EXPECT_EQ(o.kind, wb::Outcome::Kind::Wrong) << o.message;
  EXPECT_THAT(o.message, HasSubstr(fault));
}

TEST(Ch01Broken, VectorAddThatDropsTheTail) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto o = check_vector_add(&drop_tail, 1025, rng);
  expect_rejected(o, "1 unwritten");
  EXPECT_THAT(o.message, HasSubstr("(i 1024): never written"));
  EXPECT_FALSE(check_vector_add(&drop_tail, 3, rng).passed());  // n < one block: nothing written
}

TEST(Ch01Broken, MatrixAddWithRowsAndColumnsSwapped) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  EXPECT_TRUE(check_matrix_add(&swapped, 64, 64, 0, rng).passed()) << "right on squares: that is the trap";
  const auto o = check_matrix_add(&swapped, 31, 127, 0, rng);
  expect_rejected(o, "unwritten");
  EXPECT_THAT(o.message, HasSubstr("tile map"));
  expect_rejected(check_matrix_add(&swapped, 127, 31, 3, rng), "wrong");
}

TEST(Ch01Broken, RgbToGreyThatLeavesTheLastRowUnwritten) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto o = check_rgb_to_grey(&skip_last_row, 33, 65, 65, rng);
  expect_rejected(o, "65 unwritten");
  EXPECT_THAT(o.message, HasSubstr("(y 32, x 0): never written"));
}

TEST(Ch01Broken, VectorAddThatWritesNaN) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  const auto o = check_vector_add(&writes_nan, 1000, rng);
  expect_rejected(o, "10 NaN/Inf");
}

TEST(Ch01Broken, MatrixAddThatWritesIntoThePadding) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  expect_rejected(check_matrix_add(&spills, 40, 50, 3, rng), "writes outside the matrix, into the padding");
}

}  // namespace
}  // namespace ch01
