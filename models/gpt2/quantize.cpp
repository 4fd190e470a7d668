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
  std::atomic<int64_t> first_bad{N};
  // parallel_count splits [0, N) over threads; each chunk reports nothing but its bad rows.
  wb::parallel_count(N * K, [&](int64_t begin, int64_t end) -> int64_t {
    std::vector<float> buffer(static_cast<size_t>(K));
    for (int64_t n = (begin + K - 1) / K; n * K < end && n < N; ++n) {  // the rows that start in [begin, end)
      if (!quantize_row(row(n, buffer.data()), K, m.q.data() + n * K, m.scale.data() + n)) {
        int64_t seen = first_bad.load();
        while (n < seen && !first_bad.compare_exchange_weak(seen, n)) {
        }
      }
    }
    return 0;
  });
  if (const int64_t bad = first_bad.load(); bad < N) {
    throw QuantizeError(std::string(name) + ": row " + std::to_string(bad) + " of " + std::to_string(N) +
                        " holds a NaN or an infinity, which INT8 cannot represent (a scale is the row's largest "
                        "magnitude / 127). The weights file is damaged or was saved after training diverged: "
                        "use a good file, or run without --int8");
  }
  return m;
}

}  // namespace

QuantizedMatrix quantize_rows(const float* w, int64_t rows, int64_t cols, std::string_view name) {
  return quantize_all(rows, cols, name, [&](int64_t n, float*) { return w + n * cols; });
}

QuantizedMatrix quantize_rows(const Tensor& w, std::string_view name) {
  if (w.shape.size() != 2) {
    throw QuantizeError(std::string(name) + ": only a 2-D matrix [out, in] is quantized per row; this tensor has " +
                        std::to_string(w.shape.size()) + " dimensions");
  }
  const int64_t N = w.shape[0], K = w.shape[1];
  if (w.dtype == wb::DType::F32) return quantize_rows(w.f32.data(), N, K, name);
  return quantize_all(N, K, name, [&](int64_t n, float* buffer) {
    for (int64_t k = 0; k < K; ++k) buffer[k] = wb::bf16_to_float(w.bf16[size_t(n * K + k)]);
    return static_cast<const float*>(buffer);
  });
}

}  // namespace gpt2
