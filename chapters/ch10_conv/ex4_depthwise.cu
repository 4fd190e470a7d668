// Exercise 4 — depthwise 3 x 3 convolution, BF16 NHWC: a memory-bound kernel.
//
// Goal: y[n][h][v][c] = sum over r, s < 3 of x[n][h + r - 1][v + s - 1][c] * w[r][s][c]
// (zero padding, stride 1: y has x's size). Each channel has its own filter, so there is no
// reduction over channels and almost no arithmetic (18 FLOPs per output): the kernel's time
// is the time to read x once and write y once. Aim for copy speed:
//   1. one thread per output element, a loop over the 9 taps;
//   2. 8 channels per thread: x, w and y move as 16-byte vectors (uint4 of 8 BF16) when
//      C % 8 == 0, with the scalar loop for the other shapes;
//   3. neighbouring threads take neighbouring channel groups of the same pixel, so a warp
//      reads contiguous bytes; the 9-fold reuse of each input pixel comes from L1 / L2.
//
// What the tests check, and the outcome code a failure gets:
//   * every output within a BF16 tolerance of a float64 reference (9 terms, FP32 sums)
//     [wrong]; NaN never passes [nan]; every output written [unwritten], nothing outside y
//     [oob_write].
//   * 1 x 1 images, C = 1, 3, 17, 33, 190 (no multiple of 8: a 16-byte path needs a scalar
//     tail), primes, MobileNet's layers at batch 1 and 8; then the large case (past 2^31
//     elements: offsets in 64 bits).
//   * the same bits on a repeated run [nondeterministic]; all work on `stream`
//     [outside_stream]; a second call with new inputs [cached], reads past an input fault
//     [oob_read].
//
// Test:  ctest --preset ch10 -R ex4_depthwise
// Bench: build/ch10/bin/ch10_bench --benchmark_filter=depthwise
// Guide: docs/ch10-conv.md, section "Exercise 4".
#include "ch10.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch10 {
namespace {

constexpr int kThreads = 256;

__global__ void depthwise3x3_kernel(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C) {
  // TODO: the flat 64-bit index i over N * H * W * C -> (n, h, v, c), c fastest.
  // TODO: the 9 taps, skipping those outside the image, FP32 sum; y[i] = __float2bfloat16(acc).
}

}  // namespace

void student::depthwise3x3(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch10_conv/ex4_depthwise.cu");  // delete this line when you start

  require_valid_depthwise(N, H, W, C);
  const int blocks = 1;  // TODO: enough blocks for N * H * W * C outputs (64-bit count, rounded up)
  depthwise3x3_kernel<<<blocks, kThreads, 0, stream>>>(x, w, y, N, H, W, C);
  WB_CHECK_LAUNCH();
}

}  // namespace ch10
