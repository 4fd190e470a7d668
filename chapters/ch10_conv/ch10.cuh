// Chapter 10 — convolution with a fused epilogue: the interface between your kernels and the
// harness.
//
// You write the launchers declared in namespace ch10::student, one exercise per file:
//   ex1_direct.cu             conv2d/f32: FP32 NCHW direct convolution, one output per thread
//   ex2_implicit_gemm.cu      conv2d_bn_relu/bf16: BF16 NHWC convolution as an implicit GEMM on
//                             tensor cores (WMMA), im2col done on the fly by the tile loader,
//                             bias + BatchNorm + ReLU (+ residual) fused in the epilogue
//   ex3_implicit_gemm_mma.cu  the same op on mma.sync m16n8k16 with cp.async double buffering
//   ex4_depthwise.cu          depthwise3x3/bf16: NHWC depthwise 3x3, memory-bound
// Each launcher receives device pointers and a stream, picks a grid with a ceiling division,
// launches its kernel on that stream and checks the launch.
//
// The convolution (cross-correlation, as every deep-learning library computes it):
//
//   P = (H + 2 pad - R) / stride + 1        Q = (W + 2 pad - S) / stride + 1
//   y[n][k][p][q] = sum over c < C, r < R, s < S of
//                   x[n][c][p * stride - pad + r][q * stride - pad + s] * w[k][c][r][s]
//   where an input index outside [0, H) x [0, W) reads as 0 (zero padding).
//
// Layouts (every tensor packed, no padding between rows):
//   conv2d/f32        x NCHW  x[((n * C + c) * H + h) * W + w]
//                     w KCRS  w[((k * C + c) * R + r) * S + s]
//                     y NKPQ  y[((n * K + k) * P + p) * Q + q]
//   conv2d_bn_relu    x NHWC  x[((n * H + h) * W + w) * C + c]          BF16
//                     w KRSC  w[((k * R + r) * S + s) * C + c]          BF16
//                     y NPQK  y[((n * P + p) * Q + q) * K + k]          BF16 (NHWC out)
//                     residual (may be null) NPQK like y, BF16
//                     bias, gamma, beta, mean, var: K values each, FP32
//   depthwise3x3      x NHWC, w[(r * 3 + s) * C + c] (3 x 3 x C), y NHWC (H x W: stride 1,
//                     pad 1), BF16
//
// The fused epilogue of conv2d_bn_relu: a convolution with a bias, then BatchNorm at
// inference (the running statistics mean and var, the learned gamma and beta), then ReLU:
//
//   v      = acc + bias[k]                                   acc: the FP32 sum above
//   bn     = (v - mean[k]) / sqrt(var[k] + eps) * gamma[k] + beta[k]
//   y      = relu(bn + residual)                             (residual 0 when null)
//
// BatchNorm at inference is an affine map per output channel, so it FOLDS into one scale
// and one shift per channel, computed once per channel (not per element):
//
//   scale[k] = gamma[k] / sqrt(var[k] + eps)       (the VARIANCE plus eps, under a root:
//                                                  the standard deviation, not var itself)
//   shift[k] = beta[k] - mean[k] * scale[k]
//   y        = relu((acc + bias[k]) * scale[k] + shift[k] + residual)
//
// Rules the tests hold you to:
//   * accumulate in FP32, apply the whole epilogue in FP32 on the COMPLETE sum over
//     C x R x S, round once to BF16 when you store y. The epilogue is not linear (ReLU):
//     applying it to a partial sum (per K tile) is wrong.
//   * any sizes >= 1: 1 x 1 images, prime sizes, C and K of 1, 3, 13 ... (not multiples of 8:
//     a 16-byte load of 8 BF16 channels needs C % 8 == 0 and a scalar path otherwise),
//     R x S from 1 x 1 to 7 x 7, stride 1 and 2, padding 0 to 3.
//   * offsets in 64 bits: N * H * W * C passes 2^31 in the large cases.
//   * refused (std::invalid_argument, before any launch; require_valid below): stride < 1,
//     pad < 0, a filter larger than the padded input (P or Q < 1), any size < 1.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch10 {

using bf16 = __nv_bfloat16;

// The sizes of one convolution. stride and pad apply to both spatial dimensions.
struct ConvShape {
  int N, H, W, C;   // input: N images of H x W pixels, C channels
  int K, R, S;      // K filters of R x S x C
  int stride, pad;  // stride >= 1, pad >= 0

  // The output's spatial size (valid after require_valid).
  __host__ __device__ int P() const { return (H + 2 * pad - R) / stride + 1; }
  __host__ __device__ int Q() const { return (W + 2 * pad - S) / stride + 1; }
};

// Throws std::invalid_argument naming what is wrong. Call it first in every launcher.
inline void require_valid(const ConvShape& s) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  need(s.stride >= 1, "stride = " + std::to_string(s.stride) + ": the stride must be at least 1");
  need(s.pad >= 0, "pad = " + std::to_string(s.pad) + ": the padding must not be negative");
  need(s.N >= 1 && s.H >= 1 && s.W >= 1 && s.C >= 1 && s.K >= 1 && s.R >= 1 && s.S >= 1,
       "every size (N, H, W, C, K, R, S) must be at least 1");
  need(s.R <= s.H + 2 * s.pad && s.S <= s.W + 2 * s.pad,
       "the filter (" + std::to_string(s.R) + " x " + std::to_string(s.S) + ") is larger than the padded input (" +
           std::to_string(s.H + 2 * s.pad) + " x " + std::to_string(s.W + 2 * s.pad) + "): no output pixel");
}

// The BatchNorm (and bias) parameters of the epilogue: K values each, FP32, device memory.
struct BnParams {
  const float* bias;   // the convolution's bias
  const float* gamma;  // BatchNorm's scale
  const float* beta;   // BatchNorm's shift
  const float* mean;   // running mean
  const float* var;    // running variance (> 0)
  float eps;           // added to var under the square root
};

// ex1: y = conv(x, w), FP32, NCHW / KCRS / NKPQ.
using Conv2dF32Fn = void(const float* x, const float* w, float* y, ConvShape shape, cudaStream_t stream);

// ex2, ex3: y = relu(BN(conv(x, w) + bias) + residual), BF16 NHWC / KRSC / NPQK, FP32 sums.
using ConvBnReluFn = void(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape shape,
                          cudaStream_t stream);

// ex4: y[n][h][w][c] = sum over r, s < 3 of x[n][h + r - 1][w + s - 1][c] * w[r][s][c]
// (zero padding), BF16 NHWC, FP32 sums. N, H, W, C >= 1.
using Depthwise3x3Fn = void(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream);

inline void require_valid_depthwise(int N, int H, int W, int C) {
  if (N < 1 || H < 1 || W < 1 || C < 1) {
    throw std::invalid_argument("depthwise3x3: every size (N, H, W, C) must be at least 1");
  }
}

namespace student {
Conv2dF32Fn conv2d_direct;
ConvBnReluFn conv_implicit_gemm;
ConvBnReluFn conv_implicit_mma;
Depthwise3x3Fn depthwise3x3;
}  // namespace student

}  // namespace ch10
