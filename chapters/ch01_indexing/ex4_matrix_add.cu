// Exercise 4 — matrix add on rows x cols rectangles with a 2-D grid.
//
// Element (row, col) of A lives at a[row * lda + col]; B and C likewise with ldb and ldc.
//
// What the tests check, and the outcome code a failure gets:
//   * C within a few FP32 roundings of A + B in float64 [wrong]; NaN never passes [nan].
//   * every element of the rows x cols written [unwritten]; C's padding columns [cols, ldc)
//     left untouched [wrote_padding]; nothing past its end [oob_write].
//   * rectangles of every kind (1 x 1000, 1000 x 1, 257 x 255 ...), each with pad 0 and 3:
//     lda = cols + pad, ldb = cols + 2 pad, ldc = cols + 3 pad, three different strides.
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it A and B end where
//     unmapped memory begins, so a load past their last element faults [oob_read].
//   * after the small shapes, the large case 46341 x 46341 (rows * ld passes 2^31: offsets in
//     64 bits). Its matrices take 26 GB: skipped on a smaller GPU.
//
// Test:  ctest --preset ch01 -R ex4_matrix_add
// Guide: docs/ch01-indexing.md, section "Exercise 4".
#include "ch01.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch01 {
namespace {

__global__ void matrix_add_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                                  int cols) {
  // TODO: which (row, col) is this thread's? Which of x and y should follow col?
}

}  // namespace

void student::matrix_add(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols,
                         cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch01_indexing/ex4_matrix_add.cu");  // delete this line when you start

  const dim3 block(32, 8);
  const dim3 grid(1, 1);  // TODO
  matrix_add_kernel<<<grid, block, 0, stream>>>(a, lda, b, ldb, c, ldc, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
