#include "check.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "cuda/buffers.cuh"
#include "host/compare.h"
#include "host/tolerance.h"

namespace ch04 {
namespace {

float poison_float() {
  float f;
  const uint32_t bits = wb::Poison<float>::bits;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Elements of C's padding columns [n, ldc) that no longer hold the poison.
std::string padding_writes(const std::vector<float>& c, int m, int n, int ldc) {
  int64_t count = 0, first_row = -1, first_col = -1;
  for (int r = 0; r < m; ++r) {
    for (int col = n; col < ldc; ++col) {
      if (!wb::is_poison(c[static_cast<size_t>(r) * ldc + col]) && count++ == 0) first_row = r, first_col = col;
    }
  }
  if (count == 0) return {};
  return "  and " + std::to_string(count) + " writes outside the matrix, into C's padding (first at row " +
         std::to_string(first_row) + ", col " + std::to_string(first_col) + " with N=" + std::to_string(n) +
         ", ldc=" + std::to_string(ldc) + ")\n";
}

// A float64 dot product of two float rows, with four partial sums for speed.
double dot(const float* x, const float* y, int k) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int p = 0;
  for (; p + 4 <= k; p += 4) {
    s0 += double(x[p]) * y[p];
    s1 += double(x[p + 1]) * y[p + 1];
    s2 += double(x[p + 2]) * y[p + 2];
    s3 += double(x[p + 3]) * y[p + 3];
  }
  for (; p < k; ++p) s0 += double(x[p]) * y[p];
  return (s0 + s1) + (s2 + s3);
}

// Compare every element while that is cheap (about 2^28 multiply-adds on the host);
// beyond, a sample whose size shrinks as K grows, plus the first and last rows.
wb::CheckOptions options_for(int m, int n, int k, wb::Rng& rng) {
  wb::CheckOptions opt;
  opt.sample_seed = rng.next();
  const double work = double(m) * n * std::max(k, 1);
  if (work <= double(int64_t{1} << 28)) {
    opt.full_check_limit = int64_t{m} * n;
  } else {
    opt.full_check_limit = 0;
    opt.samples = std::clamp<int64_t>((int64_t{1} << 27) / std::max(k, 1), 4096, int64_t{1} << 18);
  }
  return opt;
}

}  // namespace

std::string GemmArgs::text() const {
  return "sgemm M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
         " lda=" + std::to_string(lda()) + " ldb=" + std::to_string(ldb()) + " ldc=" + std::to_string(ldc()) +
         " alpha=" + number(alpha) + " beta=" + number(beta);
}

std::vector<GemmArgs> standard_args(int m, int n, int k) {
  return {
      {m, n, k, 0, 1.0f, 0.0f},     // packed; C is output only
      {m, n, k, 4, -1.5f, 0.75f},   // padded, rows still 16-byte aligned when widths are; C is read
      {m, n, k, 3, 0.75f, -1.25f},  // an odd pad: every other row misaligned for float4
  };
}

wb::Outcome check_sgemm(SgemmFn* fn, const GemmArgs& g, wb::Rng& rng) {
  const int m = g.m, n = g.n, k = g.k, lda = g.lda(), ldb = g.ldb(), ldc = g.ldc();
  const std::string what = g.text();

  // A and B are random everywhere, padding included: a kernel that reads the padding
  // multiplies garbage in. C's padding holds the poison; so does all of C when beta == 0.
  const auto a = wb::random_floats(static_cast<size_t>(m) * lda, rng);
  const auto b = wb::random_floats(static_cast<size_t>(k) * ldb, rng);
  std::vector<float> c0(static_cast<size_t>(m) * ldc, poison_float());
  if (g.beta != 0.0f) {
    const auto interior = wb::random_floats(static_cast<size_t>(m) * n, rng);
    for (int r = 0; r < m; ++r) {
      std::copy_n(interior.begin() + static_cast<size_t>(r) * n, n, c0.begin() + static_cast<size_t>(r) * ldc);
    }
  }

  wb::DeviceBuffer<float> da(a), db(b), dc(c0);
  CUDA_CHECK(cudaDeviceSynchronize());  // the uploads are complete before the kernel's stream starts
  {
    wb::Stream stream;
    auto launch = [&](cudaStream_t s) {
      fn(m, n, k, g.alpha, da.data(), lda, db.data(), ldb, g.beta, dc.data(), ldc, s);
    };
    if (auto o = wb::run_launcher(what, launch, stream); !o.passed()) return o;
  }
  const auto c = dc.download();

  std::vector<float> got(static_cast<size_t>(m) * n);
  for (int r = 0; r < m; ++r) {
    std::copy_n(c.begin() + static_cast<size_t>(r) * ldc, n, got.begin() + static_cast<size_t>(r) * n);
  }
  // B transposed, so that each reference dot product reads two contiguous rows.
  std::vector<float> bt(static_cast<size_t>(n) * k);
  for (int p = 0; p < k; ++p) {
    for (int j = 0; j < n; ++j) bt[static_cast<size_t>(j) * k + p] = b[static_cast<size_t>(p) * ldb + j];
  }
  auto ref = [&](int64_t i) {
    const int64_t r = i / n, col = i % n;
    const double ab = dot(a.data() + r * lda, bt.data() + col * k, k);
    return double(g.alpha) * ab + (g.beta != 0.0f ? double(g.beta) * c0[r * ldc + col] : 0.0);
  };
  const double scale = std::max({std::fabs(double(g.alpha)), std::fabs(double(g.beta)), 1e-6});
  const auto tol = wb::tolerance_for(wb::DType::F32, int64_t{k} + (g.beta != 0.0f ? 1 : 0), scale);
  const wb::CheckResult r =
      wb::check_output(got, wb::Layout::matrix(m, n), ref, tol, options_for(m, n, k, rng));

  const std::string padding = padding_writes(c, m, n, ldc);
  if (r.ok && padding.empty()) return wb::Outcome::pass(r.summary());
  std::string hints;
  if (r.nonfinite > 0 && g.beta == 0.0f) {
    hints += "  hint: with beta == 0, C is output only and held NaN before the call; a kernel that reads it "
             "(0 * NaN = NaN) writes NaN. Write alpha * acc without reading C when beta == 0.\n";
  }
  if (r.unwritten > 0) {
    hints += "  hint: unwritten elements: does the grid cover every tile of C, rounding up (a ceiling "
             "division), and does each thread store every element it owns?\n";
  }
  return wb::Outcome::wrong(what + " " + r.report() + padding + hints);
}

// --- benchmark problem: random inputs, allocated once, owned by the returned launch ---

Launch prepare_sgemm(SgemmFn* fn, int m, int n, int k, uint64_t seed) {
  wb::Rng rng(seed);
  auto a = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(static_cast<size_t>(m) * k, rng));
  auto b = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(static_cast<size_t>(k) * n, rng));
  auto c = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(static_cast<size_t>(m) * n, rng));
  CUDA_CHECK(cudaDeviceSynchronize());
  return [=](cudaStream_t s) {
    fn(m, n, k, kBenchAlpha, a->data(), k, b->data(), n, kBenchBeta, c->data(), n, s);
  };
}

// --- the same problem for fair timing: new inputs before every timed launch -------------

wb::bench::Timed prepare_timed_sgemm(SgemmFn* fn, int m, int n, int k, uint64_t seed) {
  struct Buffers {
    wb::DeviceBuffer<float> a, b, c_start, c;
    wb::Rng rng;
  };
  std::random_device rd;
  auto buf = std::make_shared<Buffers>(Buffers{wb::DeviceBuffer<float>(static_cast<size_t>(m) * k),
                                               wb::DeviceBuffer<float>(static_cast<size_t>(k) * n),
                                               wb::DeviceBuffer<float>(static_cast<size_t>(m) * n),
                                               wb::DeviceBuffer<float>(static_cast<size_t>(m) * n),
                                               wb::Rng(seed ^ (uint64_t{rd()} << 32 | rd()))});
  const GemmArgs g{m, n, k, 0, kBenchAlpha, kBenchBeta};
  wb::bench::Timed t;
  t.launch = [=](cudaStream_t s) {
    fn(m, n, k, kBenchAlpha, buf->a.data(), k, buf->b.data(), n, kBenchBeta, buf->c.data(), n, s);
  };
  // C is input and output (beta != 0): its starting values are kept in c_start.
  t.next_inputs = [=](cudaStream_t s) {
    wb::fill_uniform(buf->a.data(), buf->a.size(), buf->rng.next(), -1.0f, 1.0f, s);
    wb::fill_uniform(buf->b.data(), buf->b.size(), buf->rng.next(), -1.0f, 1.0f, s);
    wb::fill_uniform(buf->c_start.data(), buf->c_start.size(), buf->rng.next(), -1.0f, 1.0f, s);
    CUDA_CHECK(cudaMemcpyAsync(buf->c.data(), buf->c_start.data(), buf->c.bytes(), cudaMemcpyDeviceToDevice, s));
  };
  t.check_last = [=] {
    const auto a = buf->a.download(), b = buf->b.download(), c0 = buf->c_start.download(), got = buf->c.download();
    std::vector<float> bt(static_cast<size_t>(n) * k);
    for (int p = 0; p < k; ++p) {
      for (int j = 0; j < n; ++j) bt[static_cast<size_t>(j) * k + p] = b[static_cast<size_t>(p) * n + j];
    }
    auto ref = [&](int64_t i) {
      const int64_t r = i / n, col = i % n;
      return double(kBenchAlpha) * dot(a.data() + r * k, bt.data() + col * k, k) + double(kBenchBeta) * c0[i];
    };
    wb::Rng sample_rng(buf->rng.next());
    const wb::CheckResult r = wb::check_output(got, wb::Layout::matrix(m, n), ref,
                                               wb::tolerance_for(wb::DType::F32, int64_t{k} + 1, 1.0),
                                               options_for(m, n, k, sample_rng));
    if (r.ok) return wb::Outcome::pass(r.summary());
    return wb::Outcome::wrong(g.text() + " " + r.report());
  };
  return t;
}

}  // namespace ch04
