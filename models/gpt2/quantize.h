// INT8 weights: a weight matrix quantized per output row, for the decode GEMVs of the GPU
// model's --int8 mode (W8A16: INT8 weights, BF16 activations, FP32 accumulation).
//
//   W  [N, K] (out, in), BF16 or FP32      ->   q [N, K] int8,  scale [N] FP32
//
//   scale[n] = max_k |W[n][k]| / 127                      (in FP32; symmetric: no zero point)
//   q[n][k]  = round(W[n][k] / scale[n]), clamped to [-127, 127]   (halves away from zero)
//   W[n][k] ~ q[n][k] * scale[n],  |W[n][k] - q[n][k] * scale[n]| <= scale[n] / 2
//
// One scale per output row: the GEMV sums a row's products in FP32 and multiplies the sum by
// the row's scale once (sum_k x[k] * q[n][k] * scale[n] = scale[n] * sum_k x[k] * q[n][k]).
// -128 is never used, so q and -q are both representable and the grid is symmetric.
// A row of zeros gets scale 1 and zeros (no division by zero). So does a row whose largest
// magnitude is so small (below 127 times FP32's smallest subnormal, about 2e-43) that
// max / 127 rounds to 0 in FP32: its values are then below scale / 2 = 0.5 too.
// A row holding NaN or Inf cannot be quantized: QuantizeError names the tensor and the row.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "weights.h"

namespace gpt2 {

struct QuantizeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct QuantizedMatrix {
  int64_t rows = 0, cols = 0;  // N, K
  std::vector<int8_t> q;       // (N, K) row-major: q[n * K + k]
  std::vector<float> scale;    // (N)

  // The weight q * scale stands for, in FP32 (what the GPU kernel multiplies by, in effect).
  float dequantized(int64_t n, int64_t k) const { return float(q[size_t(n * cols + k)]) * scale[size_t(n)]; }
  size_t bytes() const { return q.size() + scale.size() * sizeof(float); }
};

// Quantizes `rows` rows of `cols` FP32 values (row-major). `name` is for error messages.
QuantizedMatrix quantize_rows(const float* w, int64_t rows, int64_t cols, std::string_view name = "matrix");
// The same for a 2-D tensor of the loader (BF16 or FP32), [out, in] as models/gpt2 holds it.
// Throws QuantizeError when the tensor is not 2-D or holds a NaN or Inf.
QuantizedMatrix quantize_rows(const Tensor& w, std::string_view name);

}  // namespace gpt2
