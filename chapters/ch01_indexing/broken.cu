// Harness self-tests for chapter 1: launchers with the mistakes learners make, and the
// ways a launcher can cheat. Each must be rejected by the same checks the learner's kernels
// meet, with the outcome code it declares (the harness generates one test per kernel:
// ctest --preset ch01-solution -R broken). If one of these tests fails, the harness has gone
// soft, not the kernel.
#include "ch01.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch01 {
namespace {

using wb::Code;

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

// This thread's place in a 2D grid: x across the columns, y down the rows (swapped_kernel
// spells out its own, wrong, reading).
struct Xy {
  int x, y;
};
__device__ __forceinline__ Xy thread_xy() {
  return {static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x),
          static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y)};
}

// The launch of the matrix_add kernels here: blocks of 32 x 8 threads, the grid's x over the
// columns (and `extra_cols` more), its y over the rows.
template <auto kernel, int extra_cols = 0>
void launch_matrix_add(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols,
                       cudaStream_t s) {
  const dim3 block(32, 8), grid((cols + extra_cols + 31) / 32, (rows + 7) / 8);
  kernel<<<grid, block, 0, s>>>(a, lda, b, ldb, c, ldc, rows, cols);
  WB_CHECK_LAUNCH();
}

// x follows the row and y the column, with the grid still sized as if x were columns:
// every index is in range, and right, only when rows == cols.
__global__ void swapped_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                               int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= cols || col >= rows) return;
  c[static_cast<size_t>(row) * ldc + col] =
      a[static_cast<size_t>(row) * lda + col] + b[static_cast<size_t>(row) * ldb + col];
}

// Forgets the last row of the image (loops y < height - 1).
__global__ void skip_last_row_kernel(const float* rgb, float* grey, int height, int width, int pitch) {
  const auto [x, y] = thread_xy();
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

// Writes one element too many in each row: right values, but it scribbles on the padding. Its
// grid covers one column more.
__global__ void spills_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols) {
  const auto [col, row] = thread_xy();
  if (row >= rows || col > cols) return;  // <= cols: one past the end of the row
  const size_t r = static_cast<size_t>(row);
  c[r * ldc + col] = col < cols ? a[r * lda + col] + b[r * ldb + col] : 0.0f;
}

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// The bounds check lets i == n through: writes c[n], one past the end.
__global__ void one_past_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) c[i] = i < n ? a[i] + b[i] : 0.0f;
}
void writes_past_end(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  one_past_kernel<<<n / 256 + 1, 256, 0, s>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

// Loads before the bounds check: the block stages its slice of a and b in shared memory
// (a habit from chapter 2) without checking i < n, so every thread of the last block reads
// beyond a and b. The values past the end are never used and the output is right.
__global__ void early_load_kernel(const float* a, const float* b, float* c, int n) {
  __shared__ float tile[2][256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[0][threadIdx.x] = a[i];
  tile[1][threadIdx.x] = b[i];
  __syncthreads();
  if (i < n) c[i] = tile[0][threadIdx.x] + tile[1][threadIdx.x];
}
void reads_past_end(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  early_load_kernel<<<n / 256 + (n % 256 != 0), 256, 0, s>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

// Remembers its last call and does nothing when called again with the same pointers.
void caching(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  static const void* last[3] = {nullptr, nullptr, nullptr};
  static int last_n = -1;
  if (last[0] == a && last[1] == b && last[2] == c && last_n == n) return;
  last[0] = a, last[1] = b, last[2] = c, last_n = n;
  add_kernel<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

// Work outside the given stream: the whole problem, or only its last eighth, on the legacy
// default stream, the per-thread default stream, or a stream of its own.
void on_legacy_stream(const float* a, const float* b, float* c, int n, cudaStream_t) {
  add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}
void last_eighth_on_legacy(const float* a, const float* b, float* c, int n, cudaStream_t s) {
  const int head = n - n / 8;
  add_kernel<<<(head + 255) / 256, 256, 0, s>>>(a, b, c, head);
  if (n > head)
    add_kernel<<<(n - head + 255) / 256, 256, 0, cudaStreamLegacy>>>(a + head, b + head, c + head, n - head);
  WB_CHECK_LAUNCH();
}
void on_per_thread_stream(const float* a, const float* b, float* c, int n, cudaStream_t) {
  add_kernel<<<(n + 255) / 256, 256, 0, cudaStreamPerThread>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}
void on_own_blocking_stream(const float* a, const float* b, float* c, int n, cudaStream_t) {
  static cudaStream_t own = [] {
    cudaStream_t x;
    CUDA_CHECK(cudaStreamCreate(&x));
    return x;
  }();
  add_kernel<<<(n + 255) / 256, 256, 0, own>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}
void on_own_nonblocking_stream(const float* a, const float* b, float* c, int n, cudaStream_t) {
  static cudaStream_t own = [] {
    cudaStream_t x;
    CUDA_CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
    return x;
  }();
  add_kernel<<<(n + 255) / 256, 256, 0, own>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

// Row and column offsets in int: right until rows * ldc passes 2^31.
__global__ void int_index_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                                 int cols) {
  const auto [col, row] = thread_xy();
  if (row >= rows || col >= cols) return;
  c[row * ldc + col] = a[row * lda + col] + b[row * ldb + col];
}

// The whole program of exercise 0 with one cudaFree missing: c stays allocated. 4 KB at
// n = 1025: far below what a reading of the GPU's free memory can see.
void leaks_c(const float* host_a, const float* host_b, float* host_c, int n) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, bytes));
  CUDA_CHECK(cudaMalloc(&b, bytes));
  CUDA_CHECK(cudaMalloc(&c, bytes));
  CUDA_CHECK(cudaMemcpy(a, host_a, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b, host_b, bytes, cudaMemcpyHostToDevice));
  add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(host_c, c, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  // missing: CUDA_CHECK(cudaFree(c));
}

}  // namespace

WB_VARIANTS(ch01_broken, wb::Role::Broken) {
  const auto vec = [](const char* name, VectorAddFn* fn) { return wb::variant("vector_add/f32", name, fn); };
  const std::vector<Code> outside = {Code::OutsideStream};
  return {
      vec("drops_the_tail", &drop_tail).rejected_as({Code::Unwritten}, "grid rounded down"),
      vec("writes_nan", &writes_nan).rejected_as({Code::NaN}, "divides by zero"),
      vec("writes_past_end", &writes_past_end).rejected_as({Code::OobWrite}, "bounds check i <= n"),
      vec("reads_past_end", &reads_past_end).rejected_as({Code::OobRead}, "loads before the bounds check"),
      vec("caching", &caching).rejected_as({Code::Cached}, "skips a call it has seen before"),
      vec("on_legacy_stream", &on_legacy_stream).rejected_as(outside, "launch without the stream"),
      vec("last_eighth_on_legacy", &last_eighth_on_legacy)
          .rejected_as(outside, "part of the work on the default stream"),
      vec("on_per_thread_stream", &on_per_thread_stream).rejected_as(outside, "cudaStreamPerThread"),
      vec("on_own_blocking_stream", &on_own_blocking_stream).rejected_as(outside, "a blocking stream of its own"),
      vec("on_own_nonblocking_stream", &on_own_nonblocking_stream)
          .rejected_as(outside, "a non-blocking stream of its own"),
      wb::variant("matrix_add/f32", "rows_and_cols_swapped", &launch_matrix_add<swapped_kernel>)
          .rejected_as({Code::Unwritten, Code::Wrong, Code::OobWrite, Code::WrotePadding}, "x follows the row"),
      // On padded rows the extra column lands in the padding; without padding it would run into
      // the next row or past the end (an out-of-bounds write), so padded shapes only.
      wb::variant("matrix_add/f32", "writes_into_padding", &launch_matrix_add<spills_kernel, 1>)
          .rejected_as({Code::WrotePadding}, "col <= cols")
          .on({wb::Shape{{"rows", 33}, {"cols", 70}, {"pad", 5}}, wb::Shape{{"rows", 1}, {"cols", 1}, {"pad", 3}}}),
      wb::variant("matrix_add/f32", "int_index", &launch_matrix_add<int_index_kernel>)
          .rejected_as({Code::Fault, Code::OobWrite, Code::Wrong, Code::Unwritten, Code::OobRead},
                       "int row * ldc overflows")
          .on({wb::Shape{{"rows", 46341}, {"cols", 46341}, {"pad", 0}}}),
      wb::variant("rgb_to_grey/f32", "skips_last_row", &skip_last_row).rejected_as({Code::Unwritten}, "y < height - 1"),
      // The leak check counts this process's allocations (wb::AllocationCount): a leak of 4 KB
      // is seen, whatever other processes allocate or free meanwhile.
      wb::variant("vector_add_program/f32", "leaks_device_memory", &leaks_c)
          .rejected_as({Code::LaunchError}, "one cudaFree missing")
          .on({wb::Shape{{"n", 1025}}}),
  };
}

}  // namespace ch01
