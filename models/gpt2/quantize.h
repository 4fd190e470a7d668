// Weight-only quantization for the decode GEMVs of the GPU model: INT8 per output row (--int8,
// W8A16) and INT4 per group of 128 along K (--int4, W4A16; below). BF16 activations, FP32 sums.
//
// INT8 weights: a weight matrix quantized per output row.
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

// --- INT4 weights, group-wise (W4A16: the GPU model's --int4) -------------------------------
//
//   W [N, K] (out, in)   ->   packed [N, K / 2] bytes (two 4-bit codes each, the GEMV's layout
//                             below), scale [N, G] FP32, zero [N, G] uint8,  G = ceil(K / 128)
//
// Groups of kInt4Group = 128 consecutive weights of a row (along K, the input dimension); the
// last group of a row holds the K % 128 weights left when 128 does not divide K (GPT-2 1.5B's
// C = 1600 = 12 x 128 + 64). K must be a multiple of 32, the weights of one 16-byte load.
// Asymmetric, one scale and one zero point per group g of row n (its weights w):
//   lo = min(0, min w),  hi = max(0, max w)      (the range holds 0: 0 is a code exactly)
//   scale = (hi - lo) / 15 in FP32, rounded up where FP32's rounding made 15 * scale < hi - lo
//   zero  = round(-lo / scale)                   in [0, 15]
//   q     = clamp(round(w / scale + zero), 0, 15)    round: to nearest, halves away from zero
//   W[n][k] ~ (q[n][k] - zero[n][g]) * scale[n][g],  g = k / 128
// Error bound: w / scale + zero lies in [-0.5, 15.5] (lo / scale + zero is within 0.5 of 0,
// and hi - lo <= 15 scale), so the clamp moves nothing by more than the rounding does:
//   |W[n][k] - (q - zero) * scale| <= scale / 2 = (hi - lo) / 30   for every element.
// A group of zeros (or one whose range is so small that (hi - lo) / 15 underflows FP32) gets
// scale 1, zero 0 and codes 0: its values are below scale / 2 too. NaN or Inf: QuantizeError.
//
// The layout (int4_nibble): row n is K / 2 bytes from byte n * K / 2; 16-byte piece p of the
// row holds k = 32p .. 32p + 31, one group's worth for the GEMV's lane that loads it; 32-bit
// word j of the piece holds k0 = 32p + 8j .. k0 + 7, and byte b of that word holds the code of
// k0 + b in its low nibble and that of k0 + 4 + b in its high one:
//
//   word j (uint32, bit 31 left):  | q7 q3 | q6 q2 | q5 q1 | q4 q0 |    qi = q[n][k0 + i]
//                                    byte 3  byte 2  byte 1  byte 0     (hi nibble | lo nibble)
//   the kernel, byte b of the word:  v = word >> 8b
//                                    v & 0x0F -> q[k0 + b]      times x[k0 + b]      (x[k0 .. k0 + 3])
//                                    v & 0xF0 -> 16 q[k0 + 4 + b] times x[k0 + 4 + b] (x[k0 + 4 .. k0 + 7])
//
// so the low nibbles meet one 16-byte piece of x as FP32 (4 values) in order, the high nibbles
// the next, and a byte is unpacked with one shift and two masks (epilogue.cuh, dot32_w4).
inline constexpr int64_t kInt4Group = 128;  // weights per group (along K)
inline constexpr int64_t kInt4Piece = 32;   // weights per 16-byte piece: K must be a multiple

struct Int4Matrix {
  int64_t rows = 0, cols = 0;   // N, K
  std::vector<uint8_t> packed;  // (N, K / 2) bytes, the layout above
  std::vector<float> scale;     // (N, G) row-major: scale[n * G + g]
  std::vector<uint8_t> zero;    // (N, G): 0 .. 15

  int64_t groups() const { return (cols + kInt4Group - 1) / kInt4Group; }
  uint8_t code(int64_t n, int64_t k) const;  // q[n][k], 0 .. 15, read through the layout
  // The weight (q - zero) * scale stands for, in double (exact: a 5-bit integer times an FP32).
  double dequantized(int64_t n, int64_t k) const;
  size_t bytes() const { return packed.size() + scale.size() * sizeof(float) + zero.size(); }
};

// Where q[n][k] of an (N, K) matrix lives: byte `byte` of `packed`, bits shift .. shift + 3.
struct NibbleAt {
  size_t byte;
  int shift;  // 0 (low nibble) or 4 (high nibble)
};
NibbleAt int4_nibble(int64_t n, int64_t k, int64_t K);

// "" when an (N, K) matrix can be held as INT4, else why not and what to do ("K = 100 is not a
// multiple of 32 ..."); `name` starts the message.
std::string int4_shape_problem(int64_t rows, int64_t cols, std::string_view name);

// Quantizes `rows` rows of `cols` FP32 values (row-major) to INT4 as above. Throws
// QuantizeError naming `name` for a shape int4_shape_problem refuses, or a NaN or Inf (its row).
Int4Matrix quantize_int4(const float* w, int64_t rows, int64_t cols, std::string_view name = "matrix");
// The same for a 2-D tensor of the loader (BF16 or FP32), [out, in].
Int4Matrix quantize_int4(const Tensor& w, std::string_view name);

}  // namespace gpt2
