// Harness self-tests for chapter 10: launchers with the mistakes learners make. Each must be
// rejected by the same checks the learner's kernels meet, with the outcome code it declares
// (the harness makes one test per kernel). If one of these tests fails, the harness has gone
// soft, not the kernel.
//
// The BF16 mistakes share one direct kernel (one thread per output, the sum over R x S x C in
// the implicit GEMM's order kk = (r S + s) C + c) that makes one of them; right otherwise.
#include <cstdint>

#include "ch10.cuh"
#include "conv_common.cuh"
#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch10::broken {
namespace {

constexpr int kThreads = 256;

enum class Mistake {
  PadOffByOne,      // the im2col bound h <= H (and w <= W): one row past the border is read as data
  EpiloguePerTile,  // the epilogue applied to each 32-deep K tile's partial sum, the results added
  BnWithoutSqrt,    // BN folded with var + eps where sqrt(var + eps) belongs
  NchwInput,        // x read as NCHW although it is NHWC
};

template <Mistake kMistake>
__global__ void conv_bn_relu_kernel(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                    ConvShape s, int P, int Q, int64_t total) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int k = int(i % s.K);
  const int64_t m = i / s.K;
  const int q = int(m % Q), p = int(m / Q % P);
  const int64_t n = m / (int64_t(Q) * P);
  const float denom = kMistake == Mistake::BnWithoutSqrt ? bn.var[k] + bn.eps : sqrtf(bn.var[k] + bn.eps);
  const float scale = bn.gamma[k] / denom, shift = bn.beta[k] - bn.mean[k] * scale;
  const float res = residual ? __bfloat162float(residual[i]) : 0.0f;
  float acc = 0.0f, out = 0.0f;
  int kk = 0;
  for (int r = 0; r < s.R; ++r) {
    for (int t = 0; t < s.S; ++t) {
      const int h = p * s.stride - s.pad + r, v = q * s.stride - s.pad + t;
      const bool inside = kMistake == Mistake::PadOffByOne ? (h >= 0 && h <= s.H && v >= 0 && v <= s.W)
                                                           : (h >= 0 && h < s.H && v >= 0 && v < s.W);
      for (int c = 0; c < s.C; ++c, ++kk) {
        if (inside) {
          const int64_t at = kMistake == Mistake::NchwInput ? ((n * s.C + c) * s.H + h) * s.W + v
                                                            : ((n * s.H + h) * s.W + v) * s.C + c;
          acc =
              fmaf(__bfloat162float(x[at]), __bfloat162float(w[(int64_t(k) * s.R * s.S + r * s.S + t) * s.C + c]), acc);
        }
        if (kMistake == Mistake::EpiloguePerTile && kk % 32 == 31) {  // a K tile ends
          out += fmaxf((acc + bn.bias[k]) * scale + shift + res, 0.0f);
          acc = 0.0f;
        }
      }
    }
  }
  if (kMistake == Mistake::EpiloguePerTile) {
    if (kk % 32 != 0) out += fmaxf((acc + bn.bias[k]) * scale + shift + res, 0.0f);  // the last, partial tile
  } else {
    out = fmaxf((acc + bn.bias[k]) * scale + shift + res, 0.0f);
  }
  y[i] = __float2bfloat16(out);
}

template <Mistake kMistake>
void conv_bn_relu(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                  cudaStream_t stream) {
  require_valid(s);
  const int P = s.P(), Q = s.Q();
  const int64_t total = int64_t(s.N) * P * Q * s.K;
  conv_bn_relu_kernel<kMistake><<<unsigned(wb::ceil_div(total, int64_t{kThreads})), kThreads, 0, stream>>>(
      x, w, bn, residual, y, s, P, Q, total);
  WB_CHECK_LAUNCH();
}

// conv2d/f32 with the stride left out of the input index: h = p - pad + r.
__global__ void stride_ignored_kernel(const float* x, const float* w, float* y, ConvShape s, int P, int Q,
                                      int64_t total) {
  solution::NkpqOutput o;
  if (!solution::thread_output(s.K, P, Q, total, o)) return;
  float acc = 0.0f;
  for (int c = 0; c < s.C; ++c) {
    for (int r = 0; r < s.R; ++r) {
      for (int t = 0; t < s.S; ++t) {
        const int h = o.p - s.pad + r, v = o.q - s.pad + t;  // should be p * stride - pad + r
        if (h < 0 || h >= s.H || v < 0 || v >= s.W) continue;
        acc = fmaf(x[((o.n * s.C + c) * s.H + h) * s.W + v], w[((int64_t(o.k) * s.C + c) * s.R + r) * s.S + t], acc);
      }
    }
  }
  y[o.i] = acc;
}

void stride_ignored(const float* x, const float* w, float* y, ConvShape s, cudaStream_t stream) {
  require_valid(s);
  const int P = s.P(), Q = s.Q();
  const int64_t total = int64_t(s.N) * s.K * P * Q;
  stride_ignored_kernel<<<unsigned(wb::ceil_div(total, int64_t{kThreads})), kThreads, 0, stream>>>(x, w, y, s, P, Q,
                                                                                                   total);
  WB_CHECK_LAUNCH();
}

// depthwise3x3 with the filter read as [C][3][3] although it is [3][3][C].
__global__ void filter_transposed_kernel(const bf16* x, const bf16* w, bf16* y, int H, int W, int C, int64_t total) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int c = int(i % C);
  const int64_t pix = i / C;
  const int v = int(pix % W), h = int(pix / W % H);
  const int64_t n = pix / (int64_t(W) * H);
  float acc = 0.0f;
  for (int r = 0; r < 3; ++r) {
    for (int t = 0; t < 3; ++t) {
      const int hh = h + r - 1, vv = v + t - 1;
      if (hh < 0 || hh >= H || vv < 0 || vv >= W) continue;
      acc = fmaf(__bfloat162float(x[((n * H + hh) * W + vv) * C + c]), __bfloat162float(w[c * 9 + r * 3 + t]), acc);
    }
  }
  y[i] = __float2bfloat16(acc);
}

void filter_transposed(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
  const int64_t total = int64_t(N) * H * W * C;
  filter_transposed_kernel<<<unsigned(wb::ceil_div(total, int64_t{kThreads})), kThreads, 0, stream>>>(x, w, y, H, W, C,
                                                                                                      total);
  WB_CHECK_LAUNCH();
}

}  // namespace

// --- as the harness sees them: each must be rejected with one of the codes it declares.

WB_VARIANTS(ch10_broken, wb::Role::Broken) {
  using wb::Code;
  const char* bn = "conv2d_bn_relu/bf16";
  return {
      // Reads the row (column) just past the image as data: the next image's first row, or
      // past the end of x for the last image.
      wb::variant(bn, "im2col_pad_off_by_one", &conv_bn_relu<Mistake::PadOffByOne>)
          .rejected_as({Code::Wrong, Code::NaN, Code::OobRead, Code::Fault},
                       "im2col bound h <= H, w <= W: one row past the border read instead of zero padding"),
      wb::variant(bn, "epilogue_per_k_tile", &conv_bn_relu<Mistake::EpiloguePerTile>)
          .rejected_as({Code::Wrong}, "bias + BN + ReLU applied to each K tile's partial sum"),
      wb::variant(bn, "bn_without_sqrt", &conv_bn_relu<Mistake::BnWithoutSqrt>)
          .rejected_as({Code::Wrong},
                       "BN folded as gamma / (var + eps): the variance where the standard deviation "
                       "belongs"),
      wb::variant(bn, "nchw_input", &conv_bn_relu<Mistake::NchwInput>)
          .rejected_as({Code::Wrong}, "x indexed as NCHW although it is NHWC"),
      wb::variant("conv2d/f32", "stride_ignored", &stride_ignored)
          .rejected_as({Code::Wrong}, "the stride left out of the input index"),
      wb::variant("depthwise3x3/bf16", "filter_transposed", &filter_transposed)
          .rejected_as({Code::Wrong}, "the filter read as [C][3][3] although it is [3][3][C]"),
  };
}

}  // namespace ch10::broken
