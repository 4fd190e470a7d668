#include "quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "runtime/parallel.h"

namespace gpt2 {

namespace {

// One row: its scale, and its K values as int8. False (and nothing written) when the row
// holds a NaN or Inf.
bool quantize_row(const float* w, int64_t K, int8_t* q, float* scale) {
  float amax = 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    if (!std::isfinite(w[k])) return false;
    amax = std::max(amax, std::fabs(w[k]));
  }
  const float s = amax / 127.0f;  // 0 for a zero row, or when max / 127 underflows FP32
  if (s == 0.0f) {
    std::fill(q, q + K, int8_t{0});
    *scale = 1.0f;
    return true;
  }
  for (int64_t k = 0; k < K; ++k) {
    // In double, so the quotient is exact to 2^-53: std::lround rounds halves away from zero.
    const long v = std::lround(double(w[k]) / double(s));
    q[k] = static_cast<int8_t>(std::clamp(v, -127L, 127L));
  }
  *scale = s;
  return true;
}

// Runs `quantize(n, buffer, codes)` for rows [0, N) on the machine's cores (parallel_count
// splits [0, N K); a chunk takes the rows that start in it), with scratch rows of K floats and K
// bytes of the chunk's own. When it returns false for a row (a NaN or an infinity in it),
// throws naming the first such row, what cannot represent it and why (`format`), and the flag
// to run without.
template <class RowQuantize>
void quantize_each_row(int64_t N, int64_t K, std::string_view name, const char* format, const char* flag,
                       RowQuantize quantize) {
  std::atomic<int64_t> first_bad{N};
  wb::parallel_count(N * K, [&](int64_t begin, int64_t end) -> int64_t {
    std::vector<float> buffer(static_cast<size_t>(K));
    std::vector<uint8_t> codes(static_cast<size_t>(K));
    for (int64_t n = (begin + K - 1) / K; n * K < end && n < N; ++n) {  // the rows that start in [begin, end)
      if (!quantize(n, buffer.data(), codes.data())) {
        int64_t seen = first_bad.load();
        while (n < seen && !first_bad.compare_exchange_weak(seen, n)) {
        }
      }
    }
    return 0;
  });
  if (const int64_t bad = first_bad.load(); bad < N) {
    throw QuantizeError(std::string(name) + ": row " + std::to_string(bad) + " of " + std::to_string(N) +
                        " holds a NaN or an infinity, which " + format +
                        ". The weights file is damaged or was saved after training diverged: use a good file, or run "
                        "without " +
                        flag);
  }
}

// A 2-D tensor [N, K] quantized by `quantize(N, K, row)`, `row(n, buffer)` giving row n as FP32:
// an FP32 tensor's own rows, a BF16 tensor's converted into the buffer. `how` ("per row") is
// for the refusal of a tensor that is not 2-D.
template <class Quantize>
auto quantize_tensor(const Tensor& w, std::string_view name, const char* how, Quantize quantize) {
  if (w.shape.size() != 2) {
    throw QuantizeError(std::string(name) + ": only a 2-D matrix [out, in] is quantized " + how + "; this tensor has " +
                        std::to_string(w.shape.size()) + " dimensions");
  }
  const int64_t N = w.shape[0], K = w.shape[1];
  if (w.dtype == wb::DType::F32) {
    return quantize(N, K, [&](int64_t n, float*) { return static_cast<const float*>(w.f32.data() + n * K); });
  }
  return quantize(N, K, [&](int64_t n, float* buffer) {
    for (int64_t k = 0; k < K; ++k) buffer[k] = wb::bf16_to_float(w.bf16[size_t(n * K + k)]);
    return static_cast<const float*>(buffer);
  });
}

// Quantizes rows [0, N) on the machine's cores; `row(n, buffer)` gives row n as FP32
// (pointing into the buffer, which has K floats, or elsewhere). Throws naming the first bad row.
template <class RowFn>
QuantizedMatrix quantize_all(int64_t N, int64_t K, std::string_view name, RowFn row) {
  if (N < 1 || K < 1) {
    throw QuantizeError(std::string(name) + ": cannot quantize a matrix of " + std::to_string(N) + " x " +
                        std::to_string(K) + ": it needs at least one row and one column");
  }
  QuantizedMatrix m;
  m.rows = N;
  m.cols = K;
  m.q.resize(size_t(N * K));
  m.scale.resize(size_t(N));
  quantize_each_row(N, K, name, "INT8 cannot represent (a scale is the row's largest magnitude / 127)", "--int8",
                    [&](int64_t n, float* buffer, uint8_t*) {
                      return quantize_row(row(n, buffer), K, m.q.data() + n * K, m.scale.data() + n);
                    });
  return m;
}

}  // namespace

// --- INT4, group-wise (quantize.h) --------------------------------------------------------

NibbleAt int4_nibble(int64_t n, int64_t k, int64_t K) {
  const int64_t p = k / kInt4Piece, r = k % kInt4Piece;  // piece p, weight r of it
  const int64_t j = r / 8, e = r % 8;                    // word j of the piece, element e of the word
  const int64_t b = e % 4;                               // byte b of the word: elements b (low), 4 + b (high)
  return {size_t(n * (K / 2) + 16 * p + 4 * j + b), e < 4 ? 0 : 4};
}

uint8_t Int4Matrix::code(int64_t n, int64_t k) const {
  const NibbleAt at = int4_nibble(n, k, cols);
  return uint8_t((packed[at.byte] >> at.shift) & 0xF);
}

double Int4Matrix::dequantized(int64_t n, int64_t k) const {
  const size_t g = size_t(n * groups() + k / kInt4Group);
  return (double(code(n, k)) - double(zero[g])) * double(scale[g]);
}

std::string int4_shape_problem(int64_t rows, int64_t cols, std::string_view name) {
  const std::string shape = std::to_string(rows) + " x " + std::to_string(cols);
  if (rows < 1 || cols < 1) {
    return std::string(name) + ": cannot quantize a matrix of " + shape + ": it needs at least one row and one column";
  }
  if (cols % kInt4Piece != 0) {
    return std::string(name) + ": a matrix of " + shape + " (out x in): K = " + std::to_string(cols) +
           " is not a multiple of " + std::to_string(kInt4Piece) +
           ", the weights of one 16-byte load of 4-bit codes (groups are 128 along K; a row's last group may be "
           "shorter, but whole loads of 32). Quantize this model with --int8 instead, or leave it in BF16";
  }
  return "";
}

namespace {

// One group of `count` weights (count <= 128): its scale and zero, and its codes into q (count
// bytes, 0 .. 15). False (and nothing written) when it holds a NaN or Inf.
bool quantize_group(const float* w, int64_t count, uint8_t* q, float* scale, uint8_t* zero) {
  double lo = 0, hi = 0;  // the range, 0 included
  for (int64_t k = 0; k < count; ++k) {
    if (!std::isfinite(w[k])) return false;
    lo = std::min(lo, double(w[k]));
    hi = std::max(hi, double(w[k]));
  }
  float s = static_cast<float>((hi - lo) / 15.0);
  if (s > 0.0f && double(s) * 15.0 < hi - lo) s = std::nextafter(s, INFINITY);  // 15 s covers the range
  if (!(s > 0.0f)) {  // a zero group, or a range below FP32's smallest step: every |w| < 0.5
    std::fill(q, q + count, uint8_t{0});
    *scale = 1.0f;
    *zero = 0;
    return true;
  }
  const long z = std::clamp(std::lround(-lo / double(s)), 0L, 15L);
  for (int64_t k = 0; k < count; ++k) {
    q[k] = static_cast<uint8_t>(std::clamp(std::lround(double(w[k]) / double(s) + double(z)), 0L, 15L));
  }
  *scale = s;
  *zero = static_cast<uint8_t>(z);
  return true;
}

// Quantizes rows [0, N) on the machine's cores, each row group by group into its codes, then
// packs them into the layout; `row(n, buffer)` gives row n as FP32 (as quantize_all's).
template <class RowFn>
Int4Matrix quantize_all_int4(int64_t N, int64_t K, std::string_view name, RowFn row) {
  if (const std::string why = int4_shape_problem(N, K, name); !why.empty()) throw QuantizeError(why);
  Int4Matrix m;
  m.rows = N;
  m.cols = K;
  const int64_t G = m.groups();
  m.packed.assign(size_t(N * (K / 2)), 0);
  m.scale.resize(size_t(N * G));
  m.zero.resize(size_t(N * G));
  quantize_each_row(
      N, K, name, "INT4 cannot represent (a group's scale is its range / 15)", "--int4",
      [&](int64_t n, float* buffer, uint8_t* codes) {
        const float* w = row(n, buffer);
        for (int64_t g = 0; g < G; ++g) {
          const int64_t k0 = g * kInt4Group, count = std::min(kInt4Group, K - k0);
          if (!quantize_group(w + k0, count, codes + k0, &m.scale[size_t(n * G + g)], &m.zero[size_t(n * G + g)])) {
            return false;
          }
        }
        for (int64_t k = 0; k < K; ++k) {  // each byte is written by its own row only
          const NibbleAt at = int4_nibble(n, k, K);
          m.packed[at.byte] = uint8_t(m.packed[at.byte] | (codes[k] << at.shift));
        }
        return true;
      });
  return m;
}

}  // namespace

// --- the quantizers (quantize.h): of FP32 rows, or of a weights tensor ----------------------

QuantizedMatrix quantize_rows(const float* w, int64_t rows, int64_t cols, std::string_view name) {
  return quantize_all(rows, cols, name, [&](int64_t n, float*) { return w + n * cols; });
}

QuantizedMatrix quantize_rows(const Tensor& w, std::string_view name) {
  return quantize_tensor(w, name, "per row",
                         [&](int64_t N, int64_t K, auto row) { return quantize_all(N, K, name, row); });
}

Int4Matrix quantize_int4(const float* w, int64_t rows, int64_t cols, std::string_view name) {
  return quantize_all_int4(rows, cols, name, [&](int64_t n, float*) { return w + n * cols; });
}

Int4Matrix quantize_int4(const Tensor& w, std::string_view name) {
  return quantize_tensor(w, name, "in groups",
                         [&](int64_t N, int64_t K, auto row) { return quantize_all_int4(N, K, name, row); });
}

}  // namespace gpt2
