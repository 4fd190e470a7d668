// Harness self-tests for chapter 2: transposes and copies with the mistakes learners make.
// Each must be rejected by the same checks the learner's kernels meet, with the outcome code
// it declares (the harness generates one test per kernel: ctest --preset ch02-solution -R
// broken). If one of these tests fails, the harness has gone soft, not the kernel.
#include "ch02.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch02 {
namespace {

using wb::Code;

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

// Loads before the bounds check: each thread reads in[r][c] before it tests r < rows. The
// value is used only when in range, so the output is right, but the threads of the last
// row of blocks read past the end of `in` (volatile: the load cannot be moved inside the
// test, as a compiler may do with a plain one).
__global__ void early_load_kernel(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  const volatile float* vin = in;
  const float v = vin[static_cast<size_t>(r) * cols + c];
  if (r < rows && c < cols) out[static_cast<size_t>(c) * rows + r] = v;
}
void reads_past_end(const float* in, float* out, int rows, int cols, cudaStream_t s) {
  const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
  early_load_kernel<<<grid, block, 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

// The column bound lets c == cols through: the threads of that extra column write out row
// `cols`, one row past the end of `out` (with zeros: every real element is right).
__global__ void bf16_one_column_too_many_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= rows || c > cols) return;  // c > cols: should be c >= cols
  out[static_cast<size_t>(c) * rows + r] = c < cols ? in[static_cast<size_t>(r) * cols + c] : __float2bfloat16(0.0f);
}
void bf16_one_column_too_many(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t s) {
  const dim3 block(32, 8), grid(cols / 32 + 1, (rows + 7) / 8);
  bf16_one_column_too_many_kernel<<<grid, block, 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace

WB_VARIANTS(ch02_broken, wb::Role::Broken) {
  const auto f32 = [](const char* name, TransposeF32Fn* fn) { return wb::variant("transpose/f32", name, fn); };
  const auto copy = [](const char* name, StridedCopyFn* fn) { return wb::variant("strided_copy/f32", name, fn); };
  return {
      // Right on squares; on a rectangle most writes land past rows * cols and are dropped
      // (unwritten), the rest at the wrong places (wrong).
      f32("right_only_on_squares", &square_only)
          .rejected_as({Code::Unwritten, Code::Wrong}, "the output's row stride written as cols"),
      // Right on multiples of 32; 33 x 65 leaves out column 32 and out row 64 unwritten, and a
      // matrix smaller than one tile is not written at all.
      f32("whole_tiles_only", &whole_tiles_only).rejected_as({Code::Unwritten}, "grid rounded down to whole tiles"),
      wb::variant("transpose/bf16", "whole_tiles_only", &bf16_whole_tiles_only)
          .rejected_as({Code::Unwritten}, "grid rounded down to whole 16 x 16 tiles"),
      // Right on one row or one column (where a copy is a transpose), wrong on squares too.
      f32("copies_without_turning", &plain_copy).rejected_as({Code::Wrong}, "out[r][c] = in[r][c]"),
      f32("reads_past_end", &reads_past_end).rejected_as({Code::OobRead, Code::Fault}, "loads before the bounds check"),
      wb::variant("transpose/bf16", "writes_past_end", &bf16_one_column_too_many)
          .rejected_as({Code::OobWrite}, "column bound c <= cols"),
      // Right at stride 1 only.
      copy("ignores_the_stride", &ignores_stride).rejected_as({Code::Wrong}, "out[i] = in[i]"),
      copy("writes_past_end", &one_too_many).rejected_as({Code::OobWrite}, "bounds check i <= n"),
  };
}

}  // namespace ch02
