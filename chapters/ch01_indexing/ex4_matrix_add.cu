// Exercise 4 — matrix add on rows x cols rectangles with a 2-D grid.
//
// Element (row, col) of A lives at a[row * lda + col]. The tests use rectangles of every
// kind (1 x 1000, 1000 x 1, 257 x 255 ...) and leading dimensions larger than cols, and they
// check that C's padding is left alone.
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
