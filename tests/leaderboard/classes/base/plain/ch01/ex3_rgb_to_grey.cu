// Fixture submission, exercise 3: one pixel per thread on a 2-D grid.
#include <cstdint>

#include "ch01.cuh"
#include "runtime/errors.cuh"

namespace ch01 {
namespace {

__global__ void rgb_to_grey_kernel(const float* rgb, float* grey, int height, int width, int pitch) {
  const int64_t x = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t y = int64_t{blockIdx.y} * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const size_t plane = static_cast<size_t>(height) * pitch;
  const size_t at = static_cast<size_t>(y) * pitch + x;
  grey[at] = kRedWeight * rgb[at] + kGreenWeight * rgb[plane + at] + kBlueWeight * rgb[2 * plane + at];
}

}  // namespace

void student::rgb_to_grey(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t stream) {
  if (height <= 0 || width <= 0) return;
  const dim3 block(32, 8);
  const dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
  rgb_to_grey_kernel<<<grid, block, 0, stream>>>(rgb, grey, height, width, pitch);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
