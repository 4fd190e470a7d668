// v1 — one thread per element: the plain answer to exercises 1, 3 and 4.
//
// What it teaches: the global index blockIdx * blockDim + threadIdx, a grid rounded up to
// cover every element (ceiling division), and the bounds check that keeps the extra threads
// of the last block from writing. In 2-D, x follows the column (the contiguous direction) so
// that the 32 threads of a warp touch 32 neighbouring floats: one coalesced access.
//
// Run: cmake --workflow --preset ch01-solution   (tests)
//      build/ch01/bin/ch01_bench --impl=v1_one_per_thread,reference
#include "runtime/errors.cuh"
#include "device/math.cuh"
#include "ladder.cuh"

namespace ch01::solution {
namespace {

constexpr int kThreads = 256;

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void rgb_to_grey_kernel(const float* rgb, float* grey, int height, int width, int pitch) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;  // column: contiguous in memory
  const int y = blockIdx.y * blockDim.y + threadIdx.y;  // row
  if (x >= width || y >= height) return;
  const size_t plane = static_cast<size_t>(height) * pitch;
  const size_t at = static_cast<size_t>(y) * pitch + x;
  grey[at] = kRedWeight * rgb[at] + kGreenWeight * rgb[plane + at] + kBlueWeight * rgb[2 * plane + at];
}

__global__ void matrix_add_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                                  int cols) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= rows || col >= cols) return;
  c[static_cast<size_t>(row) * ldc + col] =
      a[static_cast<size_t>(row) * lda + col] + b[static_cast<size_t>(row) * ldb + col];
}

// a / b rounded up, and not as (a + b - 1) / b: for a near 2^31 that sum overflows int (the
// test's n = 2^31 - 1 does). The one every chapter uses: harness/device/math.cuh.
using wb::ceil_div;

}  // namespace

void v1_vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  if (n == 0) return;
  vector_add_kernel<<<ceil_div(n, kThreads), kThreads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

void v1_rgb_to_grey(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t stream) {
  if (height == 0 || width == 0) return;
  const dim3 block(32, 8);
  const dim3 grid(ceil_div(width, block.x), ceil_div(height, block.y));
  rgb_to_grey_kernel<<<grid, block, 0, stream>>>(rgb, grey, height, width, pitch);
  WB_CHECK_LAUNCH();
}

void v1_matrix_add(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols,
                   cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 block(32, 8);
  const dim3 grid(ceil_div(cols, block.x), ceil_div(rows, block.y));  // grid.y is at most 65535 blocks
  matrix_add_kernel<<<grid, block, 0, stream>>>(a, lda, b, ldb, c, ldc, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01::solution
