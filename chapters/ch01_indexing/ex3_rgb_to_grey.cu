// Exercise 3 — planar RGB to grey on images that are not square.
//
// A 2-D grid over the image: x runs along a row (width), y down the columns (height).
// Rows are `pitch` floats apart; the three planes are height * pitch floats apart.
// Test:  ctest --preset ch01 -R ex3_rgb_to_grey
// Guide: docs/ch01-indexing.md, section "Exercise 3".
#include "ch01.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch01 {
namespace {

__global__ void rgb_to_grey_kernel(const float* rgb, float* grey, int height, int width, int pitch) {
  // TODO: this thread's pixel (x, y); skip it if it lies outside the image.
  // TODO: read R, G and B from the three planes, write the weighted sum (kRedWeight ...).
}

}  // namespace

void student::rgb_to_grey(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch01_indexing/ex3_rgb_to_grey.cu");  // delete this line when you start

  const dim3 block(32, 8);  // 32 threads along x: one warp reads one stretch of a row
  const dim3 grid(1, 1);    // TODO: cover width along x and height along y
  rgb_to_grey_kernel<<<grid, block, 0, stream>>>(rgb, grey, height, width, pitch);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
