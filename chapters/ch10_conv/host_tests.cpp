// The chapter's float64 references on hand-made inputs: the kernels are judged against them,
// so their index arithmetic is pinned here, on any machine. A 3 x 3 image under a 3 x 3 box
// filter (sums worked out by hand) with padding and stride; the NHWC reference against the
// NCHW one on the same values (two independent index formulas); BatchNorm as its definition
// against the folded scale and shift; depthwise against the convolution, one channel at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "declare/op.cuh"

namespace {

// The reference of `op` on one shape: inputs filled by `fill(name, tensor)`, then every
// reference row; returns the expected values of `output` in logical order.
template <class Fill>
std::vector<double> run_reference(const std::string& op, wb::Shape s, Fill fill, const std::string& output = "y") {
  const wb::OpBase* o = wb::find_op(op);
  EXPECT_NE(o, nullptr) << op;
  if (o == nullptr) return {};
  if (o->common().derive) o->common().derive(s);
  std::vector<wb::HostTensor> in;
  for (const auto& t : o->common().tensors) {
    in.emplace_back(t.name, t.dtype, t.present_in(s) ? t.count(s) : 0);
    if (t.is_input() && t.present_in(s)) fill(t.name, in.back());
  }
  const wb::RefCtx r(s, in, o->common().tensors);
  const int64_t rows = o->common().ref_rows ? o->common().ref_rows(s) : 1;
  for (int64_t i = 0; i < rows; ++i) o->common().reference(r, i);
  for (size_t i = 0; i < o->common().tensors.size(); ++i) {
    if (o->common().tensors[i].name != output) continue;
    std::vector<double> out(static_cast<size_t>(o->common().tensors[i].count(s)), NAN);
    for (const auto& [index, value] : r.expected()[i]) out[static_cast<size_t>(index)] = value;
    return out;
  }
  ADD_FAILURE() << op << " has no output " << output;
  return {};
}

wb::Shape conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride,
               int64_t pad) {
  return wb::Shape{{"N", n}, {"C", c}, {"H", h},           {"W", w},    {"K", k},
                   {"R", r}, {"S", s}, {"stride", stride}, {"pad", pad}};
}

// x = 1 .. 9 on a 3 x 3 image, w = a 3 x 3 box of ones: each output is the sum of the pixels
// its window covers.
auto box = [](const std::string& name, wb::HostTensor& t) {
  for (int64_t i = 0; i < t.count(); ++i) t.set(i, name == "x" ? double(i + 1) : 1.0);
};

TEST(Ch10Reference, BoxFilterWithPadding) {
  const auto y = run_reference("conv2d/f32", conv(1, 1, 3, 3, 1, 3, 3, 1, 1), box);
  EXPECT_EQ(y, (std::vector<double>{12, 21, 16, 27, 45, 33, 24, 39, 28}));
}

TEST(Ch10Reference, BoxFilterStrideTwo) {
  // P = Q = (3 + 2 - 3) / 2 + 1 = 2: the windows centred on the four corners.
  const auto y = run_reference("conv2d/f32", conv(1, 1, 3, 3, 1, 3, 3, 2, 1), box);
  EXPECT_EQ(y, (std::vector<double>{12, 16, 24, 28}));
}

TEST(Ch10Reference, BoxFilterNoPadding) {
  const auto y = run_reference("conv2d/f32", conv(1, 1, 3, 3, 1, 3, 3, 1, 0), box);
  EXPECT_EQ(y, (std::vector<double>{45}));
}

// A value that depends on every coordinate, small integers (exact in BF16 and in the sums).
double value(int64_t a, int64_t b, int64_t c, int64_t d) { return double((a * 7 + b * 5 + c * 3 + d * 11) % 9) - 4; }

TEST(Ch10Reference, NhwcAgreesWithNchw) {
  const int64_t N = 2, C = 3, H = 5, W = 4, K = 2, R = 3, S = 2, stride = 2, pad = 1;
  const auto nchw = run_reference("conv2d/f32", conv(N, C, H, W, K, R, S, stride, pad),
                                  [&](const std::string& name, wb::HostTensor& t) {
                                    if (name == "x") {
                                      for (int64_t n = 0; n < N; ++n)
                                        for (int64_t c = 0; c < C; ++c)
                                          for (int64_t h = 0; h < H; ++h)
                                            for (int64_t w = 0; w < W; ++w)
                                              t.set(((n * C + c) * H + h) * W + w, value(n, c, h, w));
                                    } else {
                                      for (int64_t k = 0; k < K; ++k)
                                        for (int64_t c = 0; c < C; ++c)
                                          for (int64_t r = 0; r < R; ++r)
                                            for (int64_t s = 0; s < S; ++s)
                                              t.set(((k * C + c) * R + r) * S + s, value(k + 1, c, r, s));
                                    }
                                  });
  // BatchNorm with gamma 1, beta 0, mean 0, var 1 and no bias: y = relu(conv / sqrt(1 + eps)).
  wb::Shape s = conv(N, C, H, W, K, R, S, stride, pad);
  s.set_param("residual", 0);
  const auto nhwc = run_reference("conv2d_bn_relu/bf16", s, [&](const std::string& name, wb::HostTensor& t) {
    if (name == "x") {
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            for (int64_t c = 0; c < C; ++c) t.set(((n * H + h) * W + w) * C + c, value(n, c, h, w));
    } else if (name == "w") {
      for (int64_t k = 0; k < K; ++k)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t s = 0; s < S; ++s)
            for (int64_t c = 0; c < C; ++c) t.set(((k * R + r) * S + s) * C + c, value(k + 1, c, r, s));
    } else {
      for (int64_t i = 0; i < t.count(); ++i) t.set(i, name == "gamma" || name == "var" ? 1.0 : 0.0);
    }
  });
  const int64_t P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  ASSERT_EQ(nchw.size(), size_t(N * K * P * Q));
  ASSERT_EQ(nhwc.size(), nchw.size());
  const double bn = 1.0 / std::sqrt(1.0 + double(1e-5f));
  int positive = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          const double a = nchw[size_t(((n * K + k) * P + p) * Q + q)];
          const double b = nhwc[size_t(((n * P + p) * Q + q) * K + k)];
          EXPECT_NEAR(b, std::max(a * bn, 0.0), 1e-12) << "n=" << n << " k=" << k << " p=" << p << " q=" << q;
          positive += a > 0;
        }
  EXPECT_GT(positive, 0);  // the comparison saw values through the ReLU, not only zeros
}

TEST(Ch10Reference, BatchNormAsFoldedScaleAndShift) {
  // One pixel, one channel, a 1 x 1 filter: acc = x * w = 2 * 3 = 6.
  wb::Shape s = conv(1, 1, 1, 1, 1, 1, 1, 1, 0);
  s.set_param("residual", 1);
  const double bias = 0.5, gamma = 1.5, beta = -0.25, mean = 2.0, var = 4.0, res = -1.0;
  const auto y = run_reference("conv2d_bn_relu/bf16", s, [&](const std::string& name, wb::HostTensor& t) {
    const double v = name == "x"       ? 2.0
                     : name == "w"     ? 3.0
                     : name == "bias"  ? bias
                     : name == "gamma" ? gamma
                     : name == "beta"  ? beta
                     : name == "mean"  ? mean
                     : name == "var"   ? var
                                       : res;
    t.set(0, v);
  });
  const double scale = gamma / std::sqrt(var + double(1e-5f)), shift = beta - mean * scale;
  ASSERT_EQ(y.size(), 1u);
  EXPECT_NEAR(y[0], std::max((6.0 + bias) * scale + shift + res, 0.0), 1e-12);
  EXPECT_GT(y[0], 1.0);  // the ReLU did not clip this one: (6.5 - 2) * 0.75 - 0.25 - 1 = 2.125
}

TEST(Ch10Reference, DepthwiseIsAConvolutionPerChannel) {
  const int64_t H = 4, W = 5, C = 3;
  auto xv = [](int64_t h, int64_t w, int64_t c) { return value(0, c, h, w); };
  auto wv = [](int64_t r, int64_t s, int64_t c) { return value(c + 2, 1, r, s); };
  const auto dw = run_reference("depthwise3x3/bf16", wb::Shape{{"N", 1}, {"H", H}, {"W", W}, {"C", C}},
                                [&](const std::string& name, wb::HostTensor& t) {
                                  for (int64_t h = 0; h < (name == "x" ? H : 3); ++h)
                                    for (int64_t w = 0; w < (name == "x" ? W : 3); ++w)
                                      for (int64_t c = 0; c < C; ++c) {
                                        if (name == "x")
                                          t.set((h * W + w) * C + c, xv(h, w, c));
                                        else
                                          t.set((h * 3 + w) * C + c, wv(h, w, c));
                                      }
                                });
  for (int64_t c = 0; c < C; ++c) {
    const auto one =
        run_reference("conv2d/f32", conv(1, 1, H, W, 1, 3, 3, 1, 1), [&](const std::string& name, wb::HostTensor& t) {
          for (int64_t i = 0; i < t.count(); ++i) {
            t.set(i, name == "x" ? xv(i / W, i % W, c) : wv(i / 3, i % 3, c));
          }
        });
    for (int64_t i = 0; i < H * W; ++i) EXPECT_EQ(dw[size_t(i * C + c)], one[size_t(i)]) << "c=" << c << " i=" << i;
  }
}

}  // namespace
