// Exercise 3 — planar RGB to grey on images that are not square.
//
// A 2-D grid over the image: x runs along a row (width), y down the columns (height).
// Rows are `pitch` floats apart; the three planes are height * pitch floats apart.
//
// What the tests check, and the outcome code a failure gets:
//   * grey within a few FP32 roundings of 0.299 R + 0.587 G + 0.114 B in float64 [wrong];
//     NaN never passes [nan] (the padding of the rgb planes holds NaN: read pixels only).
//   * every pixel written [unwritten]; grey's padding columns [width, pitch) left untouched
//     [wrote_padding]; nothing past its end [oob_write].
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it rgb ends where
//     unmapped memory begins, so a load past its last element faults [oob_read].
//   * every rectangle from 1 x 1 to 2048 x 2049, with pitch = width and width + 5, first;
//     then the large case 16385 x 43691 (the three planes pass 2^31 floats: offsets in 64
//     bits). Its planes take 11 GB: skipped on a smaller GPU.
//
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
