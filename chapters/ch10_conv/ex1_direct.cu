// Exercise 1 — direct convolution, FP32, NCHW: one thread per output element.
//
// Goal: y[n][k][p][q] = sum over c, r, s of x[n][c][p*stride - pad + r][q*stride - pad + s]
// * w[k][c][r][s], with zeros outside the image (ch10.cuh has the layouts). Right first: any
// filter size, stride and padding; then look at what each thread reads (docs: "Exercise 1").
//
// What the tests check, and the outcome code a failure gets:
//   * every output within an FP32 tolerance of a float64 reference (it grows with
//     sqrt(C * R * S)) [wrong]; NaN never passes [nan]; every output written [unwritten],
//     nothing outside y [oob_write].
//   * 1 x 1 images, a 1 x 1 image under a 3 x 3 filter (8 of 9 taps in the padding), C = 1
//     and 3, primes, 1 x 3 and 2 x 2 and 7 x 7 filters, padding 0 to 3, stride 2, the
//     ResNet-50 layers at batch 1 and 8; then the large case (x past 2^31 elements: offsets
//     in 64 bits) [fault, oob_read, wrong].
//   * a stride of 0 and a filter larger than the padded input refused with
//     std::invalid_argument before anything is launched (call require_valid first)
//     [accepted_bad_args].
//   * the same bits on a repeated run [nondeterministic]; all work on `stream`
//     [outside_stream]; a second call with new inputs [cached], in which a read past the end
//     of x or w faults [oob_read].
//
// Test:  ctest --preset ch10 -R ex1_direct
// Bench: build/ch10/bin/ch10_bench --benchmark_filter=conv2d/f32
// Guide: docs/ch10-conv.md, section "Exercise 1".
#include "ch10.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch10 {
namespace {

constexpr int kThreads = 256;

__global__ void conv2d_direct_kernel(const float* x, const float* w, float* y, ConvShape s) {
  // TODO: one output per thread. Turn the flat 64-bit index i into (n, k, p, q), q fastest
  //       (i = ((n * K + k) * P + p) * Q + q); threads past N * K * P * Q return.
  // TODO: acc = 0; for c, r, s: h = p * stride - pad + r, v = q * stride - pad + s; skip the
  //       tap when h or v is outside the image; acc += x[n][c][h][v] * w[k][c][r][s].
  // TODO: y[i] = acc.
}

}  // namespace

void student::conv2d_direct(const float* x, const float* w, float* y, ConvShape s, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch10_conv/ex1_direct.cu");  // delete this line when you start

  require_valid(s);
  const int blocks = 1;  // TODO: enough blocks for N * K * P * Q outputs (64-bit count, rounded up)
  conv2d_direct_kernel<<<blocks, kThreads, 0, stream>>>(x, w, y, s);
  WB_CHECK_LAUNCH();
}

}  // namespace ch10
