// Chapter 10's ops, declared once (harness/declare/op.cuh).
//
//   conv2d/f32            y = conv(x, w), FP32, x NCHW, w KCRS, y NKPQ              ex1
//   conv2d_bn_relu/bf16   y = relu((conv(x, w) + bias) * scale + shift (+ res)), BF16
//                         NHWC in and out, w KRSC, FP32 sums; scale and shift folded
//                         from BatchNorm's gamma, beta, mean, var (ch10.cuh)     ex2, ex3
//   depthwise3x3/bf16     one 3 x 3 filter per channel, pad 1, stride 1, NHWC        ex4
//
// Dimensions of a shape: N, C, H, W (input), K, R, S (filters), stride, pad; P and Q (the
// output's size) are derived from them. conv2d_bn_relu has a parameter `residual` (0 or 1):
// with 1 the residual tensor is present and added before the ReLU.
//
// Error model (the tolerances below; harness/check/tolerance.h):
//   * conv2d/f32: each output is an FP32 sum of C * R * S products of inputs in [-1, 1]
//     (zero-padded taps are exact zeros, still counted): tolerance_for(F32, C R S), whose
//     relative part 2 u + 4 u sqrt(terms) covers any summation order (u = 2^-24) and whose
//     absolute part covers cancellation near zero.
//   * conv2d_bn_relu/bf16: the products of BF16 inputs are exact in FP32, and the FP32 sum of
//     C R S of them has the error above; the epilogue adds four FP32 roundings (bias, scale,
//     shift, residual), and rsqrtf is within 2 ulp, together counted as 6 more terms; BN's
//     scale gamma / sqrt(var + eps) is at most 1.5 / sqrt(0.25) = 3 on these inputs, which
//     multiplies every absolute error: input scale 3. One rounding of y to BF16 (2 u(BF16)
//     relative) is in tolerance_for's relative part. ReLU is 1-Lipschitz: it adds nothing.
//   * depthwise3x3/bf16: an FP32 sum of 9 exact products, rounded once to BF16.
// A kernel that accumulates in BF16, applies the epilogue to a partial sum, or folds BN
// with var in place of sqrt(var) is far outside these bounds on the shapes below.
//
// Shapes: tiny (1 x 1 images, 1 channel), primes, even and non-square filters, padding 0 to
// 3, stride 2, C and K that are no multiple of 8 or of any tile, the ResNet-50 3 x 3 and
// 1 x 1 layers at batch 1 and 8 (batch 32 in the benchmark), and one large case per op
// (tag "large": an input of more than 2^31 elements, for 32-bit offsets).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "ch10.cuh"
#include "declare/draw_shapes.h"
#include "declare/op.cuh"

namespace ch10 {
namespace {

using wb::DType;
constexpr const char* kDocs = "docs/ch10-conv.md";
constexpr float kEps = 1e-5f;  // BatchNorm's epsilon, as PyTorch's default

// --- shapes ---------------------------------------------------------------------------------

wb::Shape conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride,
               int64_t pad) {
  return wb::Shape{{"N", n}, {"C", c}, {"H", h},           {"W", w},    {"K", k},
                   {"R", r}, {"S", s}, {"stride", stride}, {"pad", pad}};
}

// The output's size; 1 where the arguments are invalid (the refusal cases still need sizes).
void derive_pq(wb::Shape& s) {
  const int64_t st = s["stride"], pad = s["pad"];
  const int64_t hp = s["H"] + 2 * pad - s["R"], wp = s["W"] + 2 * pad - s["S"];
  const bool ok = st >= 1 && pad >= 0 && hp >= 0 && wp >= 0;
  s.set("P", ok ? hp / st + 1 : 1);
  s.set("Q", ok ? wp / st + 1 : 1);
}

ConvShape conv_shape(const wb::Args& a) {
  return ConvShape{a.i("N"), a.i("H"), a.i("W"), a.i("C"), a.i("K"), a.i("R"), a.i("S"), a.i("stride"), a.i("pad")};
}

// ResNet-50's convolutions (C -> K, H x W input, R x R filter, stride, pad) at batch n.
std::vector<wb::Shape> resnet50(int64_t n) {
  return {conv(n, 64, 56, 56, 64, 3, 3, 1, 1),   conv(n, 128, 28, 28, 128, 3, 3, 1, 1),
          conv(n, 256, 14, 14, 256, 3, 3, 1, 1), conv(n, 512, 7, 7, 512, 3, 3, 1, 1),
          conv(n, 512, 28, 28, 128, 1, 1, 1, 0), conv(n, 256, 28, 28, 256, 3, 3, 2, 1)};
}

// The edges every convolution meets, in both layouts.
std::vector<wb::Shape> conv_shapes() {
  std::vector<wb::Shape> s = {
      conv(1, 1, 1, 1, 1, 1, 1, 1, 0),       // one pixel, one channel, one filter
      conv(1, 1, 3, 3, 1, 3, 3, 1, 1),       // every output touches the padding
      conv(1, 2, 1, 1, 3, 3, 3, 1, 1),       // a 1 x 1 image under a 3 x 3 filter: 8 of 9 taps are padding
      conv(2, 3, 5, 7, 4, 3, 3, 1, 1),       // C = 3 (an RGB stem), rectangular
      conv(1, 3, 7, 5, 2, 3, 3, 2, 1),       // stride 2 on odd sizes
      conv(1, 4, 9, 10, 3, 1, 3, 1, 1),      // a 1 x 3 filter with padding 1 on both axes
      conv(1, 6, 8, 8, 9, 2, 2, 2, 0),       // an even filter, stride 2, no padding
      conv(3, 5, 13, 11, 7, 3, 3, 1, 0),     // primes, no padding
      conv(2, 7, 17, 19, 5, 5, 5, 1, 2),     // 5 x 5, pad 2
      conv(1, 3, 31, 29, 5, 7, 7, 2, 3),     // ResNet's 7 x 7 stem, stride 2, pad 3, on primes
      conv(2, 13, 23, 29, 11, 3, 3, 2, 0),   // stride 2 without padding: the last row/column unused
      conv(1, 17, 37, 41, 19, 1, 1, 1, 0),   // 1 x 1, primes
      conv(1, 16, 33, 31, 33, 3, 3, 1, 1),   // C a multiple of 8; K one past 32
      conv(2, 32, 15, 17, 65, 3, 3, 1, 1),   // K one past 64; M = 2 x 15 x 17 = 510
      conv(1, 24, 20, 20, 128, 3, 3, 1, 1),  // K a whole tile of 128; C x R x S = 216, a partial K step
      conv(1, 40, 9, 9, 200, 1, 1, 2, 0),    // 1 x 1 with stride 2 (ResNet's projection shortcut)
  };
  for (const auto& x : resnet50(1)) s.push_back(x);
  s.push_back(conv(8, 64, 56, 56, 64, 3, 3, 1, 1));
  s.push_back(conv(8, 512, 28, 28, 128, 1, 1, 1, 0));
  s.push_back(conv(8, 256, 28, 28, 256, 3, 3, 2, 1));
  return s;
}

// One random convolution: an r x r filter (r from 1 to 5), stride 1 or 2, padding up to r / 2,
// 1 to 3 images of up to 40 x 40, C up to max_c, K up to max_k.
wb::Shape random_conv(wb::Rng& rng, int64_t max_c, int64_t max_k) {
  const int64_t r = rng.range(1, 5), st = rng.range(1, 2), pad = rng.range(0, r / 2);
  return conv(rng.range(1, 3), rng.range(1, max_c), rng.range(r, 40), rng.range(r, 40), rng.range(1, max_k), r, r, st,
              pad);
}

// Arguments every launcher refuses (ch10.cuh, require_valid).
std::vector<wb::Refusal> conv_refusals() {
  return {{conv(1, 3, 8, 8, 4, 3, 3, 0, 1), "stride 0"},
          {conv(1, 3, 2, 2, 4, 5, 5, 1, 1), "a 5 x 5 filter over a 2 x 2 input padded to 4 x 4"}};
}

// --- the float64 references ---------------------------------------------------------------

// An input as the reference reads it: FP32 inputs in place; BF16 inputs converted to floats
// (exact) once per set of input values, in one copy that every reference thread shares (a row
// reads all of w, and the rows are shared out to the machine's cores); inputs past 2^28
// elements (the large cases, where a copy would cost gigabytes) element by element.
class Floats {
 public:
  explicit Floats(const wb::HostTensor& t) : t_(&t) {
    if (t.dtype() == DType::F32) {
      f_ = static_cast<const float*>(t.raw());
    } else if (t.count() <= (int64_t{1} << 28)) {
      keep_ = converted(t);
      f_ = keep_->data();
    }
  }
  float operator[](int64_t i) const { return f_ ? f_[i] : static_cast<float>(t_->get(i)); }

 private:
  static std::shared_ptr<const std::vector<float>> converted(const wb::HostTensor& t) {
    struct Slot {
      const void* raw = nullptr;
      int64_t count = -1;
      uint64_t print = 0;
      std::shared_ptr<const std::vector<float>> v;
    };
    static std::mutex mutex;
    static Slot slots[4];
    static int next = 0;
    // A fingerprint of some of the bytes: new values at the same address are told apart.
    const uint64_t h = wb::fingerprint(t, 4096);
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& s : slots) {
      if (s.raw == t.raw() && s.count == t.count() && s.print == h) return s.v;
    }
    auto v = std::make_shared<std::vector<float>>(static_cast<size_t>(t.count()));
    for (int64_t i = 0; i < t.count(); ++i) (*v)[size_t(i)] = static_cast<float>(t.get(i));
    Slot& s = slots[next];
    next = (next + 1) % 4;
    s = Slot{t.raw(), t.count(), h, v};
    return v;
  }

  const wb::HostTensor* t_;
  const float* f_ = nullptr;
  std::shared_ptr<const std::vector<float>> keep_;
};

// A convolution's sizes, as the references read them from the shape.
struct Dims {
  int64_t C, H, W, K, R, S, st, pad, P, Q;
  explicit Dims(const wb::RefCtx& r)
      : C(r["C"]),
        H(r["H"]),
        W(r["W"]),
        K(r["K"]),
        R(r["R"]),
        S(r["S"]),
        st(r["stride"]),
        pad(r["pad"]),
        P(r["P"]),
        Q(r["Q"]) {}

  // tap(i, j, h, v) for every filter tap (i, j) of output pixel (p, q) whose input pixel (h, v)
  // lies inside the image (a tap on the padding adds nothing), i outer, j inner.
  template <class Tap>
  void taps(int64_t p, int64_t q, Tap tap) const {
    for (int64_t i = 0; i < R; ++i) {
      const int64_t h = p * st - pad + i;
      if (h < 0 || h >= H) continue;
      for (int64_t j = 0; j < S; ++j) {
        const int64_t v = q * st - pad + j;
        if (v < 0 || v >= W) continue;
        tap(i, j, h, v);
      }
    }
  }
};

// conv2d/f32, reference row (n, k, p): the Q outputs y[n][k][p][0 .. Q).
void conv_f32_row(const wb::RefCtx& r, int64_t row) {
  const Dims d(r);
  const int64_t C = d.C, H = d.H, W = d.W, K = d.K, R = d.R, S = d.S, P = d.P, Q = d.Q;
  const int64_t n = row / (K * P), k = row / P % K, p = row % P;
  const Floats x(r.in("x")), w(r.in("w"));
  for (int64_t q = 0; q < Q; ++q) {
    double acc = 0;
    for (int64_t c = 0; c < C; ++c) {
      d.taps(p, q, [&](int64_t i, int64_t j, int64_t h, int64_t v) {
        acc += double(x[((n * C + c) * H + h) * W + v]) * w[((k * C + c) * R + i) * S + j];
      });
    }
    r.expect("y", row * Q + q, acc);
  }
}

// conv2d_bn_relu/bf16, reference row (n, p, q): the K outputs of one output pixel, BN
// applied as its definition (not folded), in float64.
void conv_bn_relu_row(const wb::RefCtx& r, int64_t row) {
  const Dims d(r);
  const int64_t C = d.C, H = d.H, W = d.W, K = d.K, R = d.R, S = d.S, P = d.P, Q = d.Q;
  const int64_t n = row / (P * Q), p = row / Q % P, q = row % Q;
  const Floats x(r.in("x")), w(r.in("w"));
  const bool res = r.has("residual");
  for (int64_t k = 0; k < K; ++k) {
    double acc = 0;
    d.taps(p, q, [&](int64_t i, int64_t j, int64_t h, int64_t v) {
      const int64_t xp = ((n * H + h) * W + v) * C, wp = ((k * R + i) * S + j) * C;
      for (int64_t c = 0; c < C; ++c) acc += double(x[xp + c]) * w[wp + c];
    });
    const double v = acc + r.in("bias").get(k);
    const double bn = (v - r.in("mean").get(k)) / std::sqrt(r.in("var").get(k) + double(kEps)) * r.in("gamma").get(k) +
                      r.in("beta").get(k);
    const double out = bn + (res ? r.in("residual").get(row * K + k) : 0.0);
    r.expect("y", row * K + k, out > 0 ? out : 0.0);
  }
}

// depthwise3x3/bf16, reference row (n, h): the W x C outputs of one output row.
void depthwise_row(const wb::RefCtx& r, int64_t row) {
  const int64_t H = r["H"], W = r["W"], C = r["C"];
  const int64_t n = row / H, h = row % H;
  const Floats x(r.in("x")), w(r.in("w"));
  for (int64_t v = 0; v < W; ++v) {
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t i = 0; i < 3; ++i) {
        const int64_t hh = h + i - 1;
        if (hh < 0 || hh >= H) continue;
        for (int64_t j = 0; j < 3; ++j) {
          const int64_t vv = v + j - 1;
          if (vv < 0 || vv >= W) continue;
          acc += double(x[((n * H + hh) * W + vv) * C + c]) * w[(i * 3 + j) * C + c];
        }
      }
      r.expect("y", (row * W + v) * C + c, acc);
    }
  }
}

// --- diagnosis --------------------------------------------------------------------------

// conv2d_bn_relu: the failing elements against the common mistakes of the epilogue.
// The sum over R x S x C of output (n, p, q, k) in float64, x read as NHWC (right) or NCHW.
double conv_sum(const wb::RefCtx& r, int64_t n, int64_t p, int64_t q, int64_t k, bool x_as_nchw) {
  const Dims d(r);
  const int64_t C = d.C, H = d.H, W = d.W, R = d.R, S = d.S;
  const auto& x = r.in("x");
  const auto& w = r.in("w");
  double acc = 0;
  d.taps(p, q, [&](int64_t i, int64_t j, int64_t h, int64_t v) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t at = x_as_nchw ? ((n * C + c) * H + h) * W + v : ((n * H + h) * W + v) * C + c;
      acc += x.get(at) * w.get(((k * R + i) * S + j) * C + c);
    }
  });
  return acc;
}

// conv2d_bn_relu: the failing elements tested against the mistakes learners make, in the
// order they make them.
std::string diagnose_bn(const wb::Diagnosis& d) {
  if (d.code != wb::Code::Wrong || d.output != "y" || !d.got || !d.inputs || d.bad.empty()) return {};
  int negative = 0;
  for (int64_t idx : d.bad) negative += d.got(idx) < 0;
  if (negative > 0) {
    return "negative outputs: the ReLU (max(0, v)) is missing, or applied before the residual add";
  }
  const wb::RefCtx& r = *d.inputs;
  const int64_t K = r["K"], P = r["P"], Q = r["Q"];
  const wb::Tolerance tol = wb::tolerance_for(DType::BF16, r["C"] * r["R"] * r["S"] + 6, 3.0);
  const bool res = r.has("residual");
  int tried = 0, no_sqrt = 0, nchw = 0, no_res = 0;
  for (int64_t idx : d.bad) {
    if (tried == 8) break;
    ++tried;
    const int64_t k = idx % K, m = idx / K, q = m % Q, p = m / Q % P, n = m / (P * Q);
    const double bias = r.in("bias").get(k), gamma = r.in("gamma").get(k), beta = r.in("beta").get(k);
    const double mean = r.in("mean").get(k), var = r.in("var").get(k) + double(kEps);
    const double rv = res ? r.in("residual").get(idx) : 0.0, got = d.got(idx);
    const double acc = conv_sum(r, n, p, q, k, false);
    auto relu = [](double v) { return v > 0 ? v : 0.0; };
    if (tol.allows(relu((acc + bias - mean) / var * gamma + beta + rv), got)) ++no_sqrt;
    if (tol.allows(relu((conv_sum(r, n, p, q, k, true) + bias - mean) / std::sqrt(var) * gamma + beta + rv), got)) {
      ++nchw;
    }
    if (res && tol.allows(relu((acc + bias - mean) / std::sqrt(var) * gamma + beta), got)) ++no_res;
  }
  if (tried > 0 && no_sqrt == tried) {
    return "the output equals BatchNorm with (var + eps) where sqrt(var + eps) belongs: scale = gamma / sqrt(var + "
           "eps), the standard deviation";
  }
  if (tried > 0 && nchw == tried) {
    return "the output equals x read as NCHW: x is NHWC here, x[((n * H + h) * W + w) * C + c]";
  }
  if (tried > 0 && no_res == tried) return "the output equals the op without the residual: add residual[m * K + k]";
  return "check the epilogue on the COMPLETE sum: scale = gamma / sqrt(var + eps) (the square root of the variance), "
         "shift = beta - mean * scale, y = relu((acc + bias) * scale + shift + residual); and the im2col index: "
         "h = p * stride - pad + r, w = q * stride - pad + s, zero outside [0, H) x [0, W)";
}

std::string diagnose_f32(const wb::Diagnosis& d) {
  if (d.code == wb::Code::Unwritten) {
    return "unwritten outputs: the grid must cover N x K x P x Q outputs (a ceiling division), with P and Q from "
           "ConvShape::P() and Q()";
  }
  if (d.code != wb::Code::Wrong) return {};
  return "check the input index: h = p * stride - pad + r, w = q * stride - pad + s, a tap outside [0, H) x [0, W) "
         "adds nothing; x is NCHW, w is KCRS (ch10.cuh)";
}

// --- the ops --------------------------------------------------------------------------------

wb::OpSpec<Conv2dF32Fn> conv2d_f32() {
  auto shapes = conv_shapes();
  // x of 2048 x 1024 x 1025 = 2^31 + 2^21 elements (8.6 GB): an offset in int wraps.
  shapes.push_back(conv(1, 2048, 1024, 1025, 8, 1, 1, 1, 0).tag("large"));
  return {
      .name = "conv2d",
      .dtype = "f32",
      .title = "y = conv(x, w), NCHW, any filter, stride and padding",
      .docs = kDocs,
      .tensors = {wb::input("x", {"N", "C", "H", "W"}, DType::F32, wb::dist::uniform(-1, 1)),
                  wb::input("w", {"K", "C", "R", "S"}, DType::F32, wb::dist::uniform(-1, 1)),
                  wb::output("y", {"N", "K", "P", "Q"}, DType::F32,
                             wb::tol::terms([](const wb::Shape& s) { return s["C"] * s["R"] * s["S"]; }))},
      .derive = derive_pq,
      .reference = conv_f32_row,
      .ref_rows = [](const wb::Shape& s) { return s["N"] * s["K"] * s["P"]; },
      .test_shapes = shapes,
      .random_shapes =
          [](wb::Rng& rng) {
            return wb::draw_shapes(rng, 3, [](wb::Rng& g) { return random_conv(g, 40, 40).tag("random"); });
          },
      .race_shapes = {conv(2, 16, 30, 30, 24, 3, 3, 1, 1)},
      .bench_shapes = {conv(8, 64, 56, 56, 64, 3, 3, 1, 1), conv(8, 256, 14, 14, 256, 3, 3, 1, 1),
                       conv(8, 512, 28, 28, 128, 1, 1, 1, 0)},
      .full_bench_shapes = resnet50(8),
      .bytes =
          [](const wb::Shape& s) {
            return 4.0 * (double(s["N"]) * s["C"] * s["H"] * s["W"] + double(s["K"]) * s["C"] * s["R"] * s["S"] +
                          double(s["N"]) * s["K"] * s["P"] * s["Q"]);
          },
      .flops = [](const wb::Shape& s) { return 2.0 * s["N"] * s["K"] * s["P"] * s["Q"] * s["C"] * s["R"] * s["S"]; },
      .peak = wb::Peak::FP32,
      .launch = [](Conv2dF32Fn* fn, const wb::Args& a,
                   cudaStream_t st) { fn(a.in<float>("x"), a.in<float>("w"), a.out<float>("y"), conv_shape(a), st); },
      .checks = {.deterministic = 1},
      .diagnose = diagnose_f32,
      .refused = conv_refusals(),
  };
}

wb::OpSpec<ConvBnReluFn> conv2d_bn_relu() {
  std::vector<wb::Shape> shapes;
  for (const auto& s : conv_shapes()) shapes.push_back(wb::Shape(s).set_param("residual", 0));
  // The residual add on a few of them: tiny, primes, stride 2, a ResNet block's second conv.
  for (const auto& s :
       {conv(1, 1, 3, 3, 1, 3, 3, 1, 1), conv(2, 13, 23, 29, 11, 3, 3, 2, 0), conv(2, 32, 15, 17, 65, 3, 3, 1, 1),
        conv(1, 64, 56, 56, 64, 3, 3, 1, 1), conv(8, 128, 28, 28, 128, 3, 3, 1, 1)}) {
    shapes.push_back(wb::Shape(s).set_param("residual", 1));
  }
  // x of 1024 x 1025 x 2048 = 2^31 + 2^21 elements (4.3 GB): an offset in int wraps.
  shapes.push_back(conv(1, 2048, 1024, 1025, 8, 1, 1, 1, 0).set_param("residual", 0).tag("large"));
  auto residual = wb::input("residual", {"N", "P", "Q", "K"}, DType::BF16, wb::dist::uniform(-1, 1));
  residual.present = [](const wb::Shape& s) { return s.param_or("residual", 0) != 0; };
  auto refused = conv_refusals();
  for (auto& r : refused) r.shape.set_param("residual", 0);
  auto bench = resnet50(32);
  for (auto& s : bench) s.set_param("residual", 0);
  auto full = resnet50(8);
  for (auto& s : full) s.set_param("residual", 0);
  full.push_back(conv(32, 64, 56, 56, 64, 3, 3, 1, 1).set_param("residual", 1));
  return {
      .name = "conv2d_bn_relu",
      .dtype = "bf16",
      .title = "y = relu(BN(conv(x, w) + bias) + residual), NHWC, FP32 sums, BN folded",
      .docs = kDocs,
      .tensors = {wb::input("x", {"N", "H", "W", "C"}, DType::BF16, wb::dist::uniform(-1, 1)),
                  wb::input("w", {"K", "R", "S", "C"}, DType::BF16, wb::dist::uniform(-1, 1)),
                  wb::input("bias", {"K"}, DType::F32, wb::dist::uniform(-1, 1)),
                  wb::input("gamma", {"K"}, DType::F32, wb::dist::uniform(0.5, 1.5)),
                  wb::input("beta", {"K"}, DType::F32, wb::dist::uniform(-1, 1)),
                  wb::input("mean", {"K"}, DType::F32, wb::dist::uniform(-1, 1)),
                  // var in [0.25, 4]: sqrt(var) and var differ by 2x at both ends.
                  wb::input("var", {"K"}, DType::F32, wb::dist::uniform(0.25, 4)), residual,
                  wb::output("y", {"N", "P", "Q", "K"}, DType::BF16,
                             wb::tol::terms([](const wb::Shape& s) { return s["C"] * s["R"] * s["S"] + 6; }, 3.0))},
      .derive = derive_pq,
      .reference = conv_bn_relu_row,
      .ref_rows = [](const wb::Shape& s) { return s["N"] * s["P"] * s["Q"]; },
      .test_shapes = shapes,
      .random_shapes =
          [](wb::Rng& rng) {
            return wb::draw_shapes(rng, 3, [](wb::Rng& g) {
              return random_conv(g, 72, 150).set_param("residual", double(g.range(0, 1))).tag("random");
            });
          },
      .race_shapes = {conv(2, 16, 30, 30, 136, 3, 3, 1, 1).set_param("residual", 1)},
      .bench_shapes = bench,
      .full_bench_shapes = full,
      .bytes =
          [](const wb::Shape& s) {
            const double y = double(s["N"]) * s["P"] * s["Q"] * s["K"];
            const bool res = s.param_or("residual", 0) != 0;
            return 2.0 * (double(s["N"]) * s["H"] * s["W"] * s["C"] + double(s["K"]) * s["R"] * s["S"] * s["C"] + y +
                          (res ? y : 0.0)) +
                   4.0 * 5 * s["K"];
          },
      .flops = [](const wb::Shape& s) { return 2.0 * s["N"] * s["P"] * s["Q"] * s["K"] * s["C"] * s["R"] * s["S"]; },
      .peak = wb::Peak::BF16Tensor,
      .launch =
          [](ConvBnReluFn* fn, const wb::Args& a, cudaStream_t st) {
            const BnParams bn{a.in<float>("bias"), a.in<float>("gamma"), a.in<float>("beta"),
                              a.in<float>("mean"), a.in<float>("var"),   kEps};
            fn(a.in<bf16>("x"), a.in<bf16>("w"), bn, a.in<bf16>("residual"), a.out<bf16>("y"), conv_shape(a), st);
          },
      .checks = {.deterministic = 1},
      .diagnose = diagnose_bn,
      .refused = refused,
  };
}

wb::Shape dw(int64_t n, int64_t h, int64_t w, int64_t c) { return wb::Shape{{"N", n}, {"H", h}, {"W", w}, {"C", c}}; }

wb::OpSpec<Depthwise3x3Fn> depthwise3x3() {
  std::vector<wb::Shape> shapes = {
      dw(1, 1, 1, 1),
      dw(1, 1, 1, 8),
      dw(1, 3, 3, 8),
      dw(2, 5, 7, 3),
      dw(1, 2, 9, 16),
      dw(1, 13, 11, 17),
      dw(3, 17, 19, 24),
      dw(1, 31, 29, 33),
      dw(2, 7, 7, 960),
      dw(1, 14, 14, 576),
      dw(1, 28, 28, 192),
      dw(1, 56, 56, 144),
      dw(1, 112, 112, 32),
      dw(8, 56, 56, 144),
      dw(8, 28, 28, 190),
      // 1 x 1024 x 1025 x 2048 = 2^31 + 2^21 elements (4.3 GB): an offset in int wraps.
      dw(1, 1024, 1025, 2048).tag("large"),
  };
  return {
      .name = "depthwise3x3",
      .dtype = "bf16",
      .title = "y = depthwise 3 x 3 conv(x, w), pad 1, stride 1, NHWC, FP32 sums",
      .docs = kDocs,
      .tensors = {wb::input("x", {"N", "H", "W", "C"}, DType::BF16, wb::dist::uniform(-1, 1)),
                  wb::input("w", {"R3", "S3", "C"}, DType::BF16, wb::dist::uniform(-1, 1)),
                  wb::output("y", {"N", "H", "W", "C"}, DType::BF16,
                             wb::tol::terms([](const wb::Shape&) { return 9; }))},
      .derive =
          [](wb::Shape& s) {
            s.set("R3", 3);
            s.set("S3", 3);
          },
      .reference = depthwise_row,
      .ref_rows = [](const wb::Shape& s) { return s["N"] * s["H"]; },
      .test_shapes = shapes,
      .random_shapes =
          [](wb::Rng& rng) {
            return wb::draw_shapes(rng, 3, [](wb::Rng& g) {
              return dw(g.range(1, 3), g.range(1, 60), g.range(1, 60), g.range(1, 200)).tag("random");
            });
          },
      .bench_shapes = {dw(32, 112, 112, 64), dw(32, 112, 112, 96), dw(32, 56, 56, 144)},
      .full_bench_shapes = {dw(32, 28, 28, 192), dw(32, 14, 14, 576), dw(32, 7, 7, 960)},
      .bytes = [](const wb::Shape& s) { return 2.0 * (2.0 * s["N"] * s["H"] * s["W"] * s["C"] + 9.0 * s["C"]); },
      .flops = [](const wb::Shape& s) { return 18.0 * s["N"] * s["H"] * s["W"] * s["C"]; },
      .peak = wb::Peak::FP32,
      .launch =
          [](Depthwise3x3Fn* fn, const wb::Args& a, cudaStream_t st) {
            fn(a.in<bf16>("x"), a.in<bf16>("w"), a.out<bf16>("y"), a.i("N"), a.i("H"), a.i("W"), a.i("C"), st);
          },
      .checks = {.deterministic = 1},
  };
}

}  // namespace

WB_OPS(ch10) { wb::add_ops(conv2d_f32(), conv2d_bn_relu(), depthwise3x3()); }

}  // namespace ch10
