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

// kernel(in, out, rows, cols) with a thread per element of the rows x cols input, in blocks
// of 32 x 8, the grid rounded up.
template <auto kKernel, class T>
void per_element(const T* in, T* out, int rows, int cols, cudaStream_t s) {
  const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
  kKernel<<<grid, block, 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

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
  const dim3 grid(cols / 32, rows / 32);   // should round up
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

// A right transpose, one thread per element: what the vector kernel below falls back to.
__global__ void plain_transpose_kernel(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[static_cast<size_t>(c) * rows + r] = in[static_cast<size_t>(r) * cols + c];
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

// Offsets in int: r * cols + c and c * rows + r wrap past 2^31 elements (the large case),
// so the last rows of `in` are read from, and the last rows of `out` written to, addresses
// 8 GB before the matrices.
__global__ void bf16_int_offsets_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];  // should be size_t(c) * rows + r ...
}

// The strided copy with in[i * stride] in int: right until (n - 1) * stride passes 2^31.
__global__ void int_stride_offset_kernel(const float* in, float* out, int n, int stride) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i * stride];  // should be size_t(i) * stride
}
void int_stride_offset(const float* in, float* out, int n, int stride, cudaStream_t s) {
  int_stride_offset_kernel<<<(n + 255) / 256, 256, 0, s>>>(in, out, n, stride);
  WB_CHECK_LAUNCH();
}

// A vector path checked on one side only: each thread turns a 4 x 4 block with float4 loads
// of `in` and float4 stores into `out`, taken when cols % 4 == 0 (rows of `in` aligned), with
// a scalar path for blocks cut by an edge. The stores need rows % 4 == 0 as well (a row of
// `out` is `rows` long); without it they are misaligned. Right on every shape whose row
// count is a multiple of 4 whenever the column count is, or smaller than 4.
__global__ void vec4_cols_only_kernel(const float* in, float* out, int rows, int cols) {
  const int c = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  const int r = 4 * (blockIdx.y * blockDim.y + threadIdx.y);
  if (r >= rows || c >= cols) return;
  if (r + 4 <= rows && c + 4 <= cols) {
    float4 a[4];
    for (int i = 0; i < 4; ++i) a[i] = *reinterpret_cast<const float4*>(in + size_t(r + i) * cols + c);
    const float4 t[4] = {{a[0].x, a[1].x, a[2].x, a[3].x},
                         {a[0].y, a[1].y, a[2].y, a[3].y},
                         {a[0].z, a[1].z, a[2].z, a[3].z},
                         {a[0].w, a[1].w, a[2].w, a[3].w}};
    for (int j = 0; j < 4; ++j)
      *reinterpret_cast<float4*>(out + size_t(c + j) * rows + r) = t[j];  // rows % 4 unchecked
    return;
  }
  for (int i = r; i < min(r + 4, rows); ++i) {
    for (int j = c; j < min(c + 4, cols); ++j) out[size_t(j) * rows + i] = in[size_t(i) * cols + j];
  }
}
void vec4_cols_only(const float* in, float* out, int rows, int cols, cudaStream_t s) {
  if (cols % 4 != 0) return per_element<plain_transpose_kernel, float>(in, out, rows, cols, s);
  const dim3 block(16, 16), grid((cols / 4 + 15) / 16, (rows + 63) / 64);
  vec4_cols_only_kernel<<<grid, block, 0, s>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace

WB_VARIANTS(ch02_broken, wb::Role::Broken) {
  const auto f32 = [](const char* name, TransposeF32Fn* fn) { return wb::variant("transpose/f32", name, fn); };
  const auto copy = [](const char* name, StridedCopyFn* fn) { return wb::variant("strided_copy/f32", name, fn); };
  const std::vector<Code> int_overflow = {Code::Fault, Code::OobWrite,  Code::OobRead,
                                          Code::Wrong, Code::Unwritten, Code::NaN};
  return {
      // Right on squares; on a rectangle most writes land past rows * cols and are dropped
      // (unwritten), the rest at the wrong places (wrong).
      f32("right_only_on_squares", &per_element<square_only_kernel, float>)
          .rejected_as({Code::Unwritten, Code::Wrong}, "the output's row stride written as cols"),
      // Right on multiples of 32; 33 x 65 leaves out column 32 and out row 64 unwritten, and a
      // matrix smaller than one tile is not written at all.
      f32("whole_tiles_only", &whole_tiles_only).rejected_as({Code::Unwritten}, "grid rounded down to whole tiles"),
      wb::variant("transpose/bf16", "whole_tiles_only", &bf16_whole_tiles_only)
          .rejected_as({Code::Unwritten}, "grid rounded down to whole 16 x 16 tiles"),
      // Right on one row or one column (where a copy is a transpose), wrong on squares too.
      f32("copies_without_turning", &per_element<plain_copy_kernel, float>)
          .rejected_as({Code::Wrong}, "out[r][c] = in[r][c]"),
      f32("reads_past_end", &per_element<early_load_kernel, float>)
          .rejected_as({Code::OobRead, Code::Fault}, "loads before the bounds check"),
      wb::variant("transpose/bf16", "writes_past_end", &bf16_one_column_too_many)
          .rejected_as({Code::OobWrite}, "column bound c <= cols"),
      // Right at stride 1 only.
      copy("ignores_the_stride", &ignores_stride).rejected_as({Code::Wrong}, "out[i] = in[i]"),
      copy("writes_past_end", &one_too_many).rejected_as({Code::OobWrite}, "bounds check i <= n"),
      // Right below 2^31 elements; the large cases wrap the offsets.
      wb::variant("transpose/bf16", "int_offsets", &per_element<bf16_int_offsets_kernel, __nv_bfloat16>)
          .rejected_as(int_overflow, "r * cols + c and c * rows + r computed in int")
          .on({wb::Shape{{"rows", 1000}, {"cols", 1003}}, wb::Shape{{"rows", 46344}, {"cols", 46344}}}),
      copy("int_stride_offset", &int_stride_offset)
          .rejected_as(int_overflow, "in[i * stride] computed in int")
          .on({wb::Shape{{"n", 1025}, {"stride", 7}},
               wb::Shape{{"n", (int64_t{1} << 26) + (int64_t{1} << 20)}, {"stride", 32}}}),
      // Caught by the vector-tail shapes (cols a multiple of 4, rows not).
      f32("vector_path_checks_cols_only", &vec4_cols_only)
          .rejected_as({Code::Fault, Code::OobWrite, Code::Wrong, Code::Unwritten},
                       "a float4 4 x 4 path taken when cols % 4 == 0, whatever rows is"),
  };
}

}  // namespace ch02
