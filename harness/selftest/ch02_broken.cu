// Harness self-tests for chapter 2: transposes and copies with the mistakes learners make.
// Each must be rejected by the same checks the learner's kernels meet, with a message
// naming the fault. If one of these tests fails, the harness has gone soft, not the kernel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ch02.cuh"
#include "check.cuh"
#include "cuda/errors.cuh"
#include "cuda/gtest_support.cuh"

namespace ch02 {
namespace {

using ::testing::HasSubstr;

// Right only on squares: the output's row stride is written as `cols` (the input's) where it
// must be `rows`. The author met an illegal-address fault on a rectangle and "fixed" it by
// bounds-checking the flat output index, so it no longer faults: it writes the wrong places.
__global__ void square_only_kernel(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= rows || c >= cols) return;
  const size_t dst = static_cast<size_t>(c) * cols + r;  // should be c * rows + r
  if (dst < static_cast<size_t>(rows) * cols) out[dst] = in[static_cast<size_t>(r) * cols + c];
}
void square_only(const float* in, float* out, int rows, int cols, cudaStream_t s) {
  const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
  square_only_kernel<<<grid, block, 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

// A tiled transpose whose grid is rounded down (cols / 32, rows / 32): the last partial
// tile column and row are never transposed. Right exactly when rows and cols are
// multiples of 32.
__global__ void whole_tiles_only_kernel(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[32][33];
  const int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (r0 + ty < rows && c0 + tx < cols) tile[ty][tx] = in[static_cast<size_t>(r0 + ty) * cols + c0 + tx];
  __syncthreads();
  if (c0 + ty < cols && r0 + tx < rows) out[static_cast<size_t>(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}
void whole_tiles_only(const float* in, float* out, int rows, int cols, cudaStream_t s) {
  const dim3 grid(cols / 32, rows / 32);  // should round up
  if (grid.x == 0 || grid.y == 0) return;  // (a zero-sized grid would be a launch error)
  whole_tiles_only_kernel<<<grid, dim3(32, 32), 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

// The same mistake in BF16, with a tile the size of the block: a 16 x 16 grid step.
__global__ void bf16_whole_tiles_only_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols) {
  const int c = blockIdx.x * 16 + threadIdx.x, r = blockIdx.y * 16 + threadIdx.y;
  if (r < rows && c < cols) out[static_cast<size_t>(c) * rows + r] = in[static_cast<size_t>(r) * cols + c];
}
void bf16_whole_tiles_only(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t s) {
  const dim3 grid(cols / 16, rows / 16);
  if (grid.x == 0 || grid.y == 0) return;
  bf16_whole_tiles_only_kernel<<<grid, dim3(16, 16), 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

// A transpose without the turn: copies in[r][c] to out[r][c] (as if out had `cols` columns).
__global__ void plain_copy_kernel(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[static_cast<size_t>(r) * cols + c] = in[static_cast<size_t>(r) * cols + c];
}
void plain_copy(const float* in, float* out, int rows, int cols, cudaStream_t s) {
  const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
  plain_copy_kernel<<<grid, block, 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

// A strided copy that forgets the stride: out[i] = in[i].
__global__ void ignores_stride_kernel(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
void ignores_stride(const float* in, float* out, int n, int /*stride*/, cudaStream_t s) {
  ignores_stride_kernel<<<(n + 255) / 256, 256, 0, s>>>(in, out, n);
  WB_CHECK_LAUNCH();
}

// A strided copy whose last block runs one element past the end of `out`.
__global__ void one_too_many_kernel(const float* in, float* out, int n, int stride) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = in[static_cast<size_t>(i < n ? i : n - 1) * stride];  // <= n: one past the end
}
void one_too_many(const float* in, float* out, int n, int stride, cudaStream_t s) {
  one_too_many_kernel<<<n / 256 + 1, 256, 0, s>>>(in, out, n, stride);
  WB_CHECK_LAUNCH();
}

void expect_rejected(const wb::Outcome& o, const std::string& fault) {
  EXPECT_EQ(o.kind, wb::Outcome::Kind::Wrong) << o.message;
  EXPECT_THAT(o.message, HasSubstr(fault));
}

TEST(Ch02Broken, TransposeRightOnlyOnSquares) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  EXPECT_TRUE(check_transpose_f32(&square_only, 64, 64, rng).passed()) << "right on squares: that is the trap";
  EXPECT_TRUE(check_transpose_f32(&square_only, 33, 33, rng).passed()) << "squares of any size";
  // Wide: out has cols rows of `rows` elements; with stride cols, most writes land past
  // rows*cols and are dropped, so most of the output stays unwritten, and the rest is wrong.
  const auto wide = check_transpose_f32(&square_only, 31, 127, rng);
  expect_rejected(wide, "unwritten");
  EXPECT_THAT(wide.message, HasSubstr("wrong of"));
  EXPECT_THAT(wide.message, HasSubstr("never written"));
  EXPECT_THAT(wide.message, HasSubstr("tile map"));
  // Tall: every write is in range but lands in the first 1057 elements, most of them at
  // the wrong place (several threads race for some): wrong values and unwritten ones.
  const auto tall = check_transpose_f32(&square_only, 127, 31, rng);
  expect_rejected(tall, "wrong of");
  EXPECT_THAT(tall.message, HasSubstr("unwritten"));
  EXPECT_THAT(tall.message, HasSubstr("(out_row "));
}

TEST(Ch02Broken, TransposeMissingTheLastPartialTile) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  EXPECT_TRUE(check_transpose_f32(&whole_tiles_only, 64, 96, rng).passed()) << "right on tile multiples";
  // 33 x 65: only the 32 x 64 corner is done. out is 65 x 33: out column 32 (input row 32)
  // and out row 64 (input column 64) stay poisoned: 65 + 33 - 1 = 97 elements.
  const auto o = check_transpose_f32(&whole_tiles_only, 33, 65, rng);
  expect_rejected(o, "97 unwritten");
  EXPECT_THAT(o.message, HasSubstr("(out_row 0, out_col 32): never written"));
  EXPECT_THAT(o.message, HasSubstr("tile map"));
  // Smaller than one tile: nothing at all is written.
  expect_rejected(check_transpose_f32(&whole_tiles_only, 7, 13, rng), "91 unwritten");
  // The same mistake in BF16.
  const auto b = check_transpose_bf16(&bf16_whole_tiles_only, 40, 20, rng);
  expect_rejected(b, "unwritten");
  EXPECT_THAT(b.message, HasSubstr("(out_row 0, out_col 32): never written"));
}

TEST(Ch02Broken, TransposeThatOnlyCopies) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  expect_rejected(check_transpose_f32(&plain_copy, 40, 50, rng), "wrong of");
  expect_rejected(check_transpose_f32(&plain_copy, 50, 50, rng), "wrong of");  // squares too
}

TEST(Ch02Broken, StridedCopyThatIgnoresTheStride) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  EXPECT_TRUE(check_strided_copy(&ignores_stride, 1000, 1, rng).passed()) << "right at stride 1";
  const auto o = check_strided_copy(&ignores_stride, 1000, 3, rng);
  expect_rejected(o, "wrong of");
  EXPECT_THAT(o.message, HasSubstr("(i 1): expected"));
}

TEST(Ch02Broken, StridedCopyThatWritesPastTheEnd) {
  WB_REQUIRE_GPU();
  auto rng = wb::test_rng();
  expect_rejected(check_strided_copy(&one_too_many, 1000, 2, rng), "writes past the end of the output");
}

}  // namespace
}  // namespace ch02
