#include "check.cuh"

#include <memory>
#include <random>

#include "cuda/buffers.cuh"
#include "host/compare.h"
#include "host/tolerance.h"

namespace ch01 {
namespace {

// Runs the launcher on a fresh stream; returns the non-pass outcome, or Pass.
wb::Outcome run(const std::string& what, const std::function<void(cudaStream_t)>& launch) {
  wb::Stream stream;
  return wb::run_launcher(what, launch, stream);
}

wb::Outcome verdict(const std::string& what, const wb::CheckResult& r, const std::string& extra = {}) {
  if (r.ok && extra.empty()) return wb::Outcome::pass(r.summary());
  return wb::Outcome::wrong(what + " " + r.report() + extra);
}

// Elements of a padded (rows x ld) buffer that lie in the padding but no longer hold the
// poison: the kernel wrote outside the rows x cols region.
std::string padding_writes(const std::vector<float>& buf, int rows, int cols, int ld) {
  int64_t count = 0, first_row = -1, first_col = -1;
  for (int r = 0; r < rows; ++r) {
    for (int c = cols; c < ld; ++c) {
      if (!wb::is_poison(buf[static_cast<size_t>(r) * ld + c]) && count++ == 0) first_row = r, first_col = c;
    }
  }
  if (count == 0) return {};
  return "  and " + std::to_string(count) + " writes outside the matrix, into the padding (first at row " +
         std::to_string(first_row) + ", col " + std::to_string(first_col) + " with cols=" + std::to_string(cols) +
         ", ld=" + std::to_string(ld) + ")\n";
}

std::vector<float> padded_random(int rows, int ld, wb::Rng& rng) {
  return wb::random_floats(static_cast<size_t>(rows) * ld, rng);
}

}  // namespace

wb::Outcome check_vector_add(VectorAddFn* fn, int n, wb::Rng& rng, const std::string& op) {
  const std::string what = op + " n=" + std::to_string(n);
  const auto a = wb::random_floats(n, rng), b = wb::random_floats(n, rng);
  wb::DeviceBuffer<float> da(a), db(b), dc(n);
  dc.poison();
  if (auto o = run(what, [&](cudaStream_t s) { fn(da.data(), db.data(), dc.data(), n, s); }); !o.passed()) return o;
  const auto got = dc.download();
  return verdict(what, wb::check_output(got, wb::Layout::vector(n),
                                        [&](int64_t i) { return double(a[i]) + double(b[i]); },
                                        wb::tolerance_for(wb::DType::F32, 2)));
}

wb::Outcome check_rgb_to_grey(RgbToGreyFn* fn, int height, int width, int pitch, wb::Rng& rng) {
  const std::string what = "rgb_to_grey height=" + std::to_string(height) + " width=" + std::to_string(width) +
                           " pitch=" + std::to_string(pitch);
  const size_t plane = static_cast<size_t>(height) * pitch;
  const auto rgb = wb::random_floats(3 * plane, rng, 0.0f, 1.0f);
  wb::DeviceBuffer<float> drgb(rgb), dgrey(plane);
  dgrey.poison();
  if (auto o = run(what, [&](cudaStream_t s) { fn(drgb.data(), dgrey.data(), height, width, pitch, s); });
      !o.passed()) {
    return o;
  }
  const auto padded = dgrey.download();
  std::vector<float> got(static_cast<size_t>(height) * width);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) got[static_cast<size_t>(y) * width + x] = padded[static_cast<size_t>(y) * pitch + x];
  }
  auto ref = [&](int64_t i) {
    const size_t at = static_cast<size_t>(i / width) * pitch + i % width;
    return double(kRedWeight) * rgb[at] + double(kGreenWeight) * rgb[plane + at] + double(kBlueWeight) * rgb[2 * plane + at];
  };
  return verdict(what,
                 wb::check_output(got, wb::Layout::matrix(height, width, "y", "x"), ref,
                                  wb::tolerance_for(wb::DType::F32, 3)),
                 padding_writes(padded, height, width, pitch));
}

wb::Outcome check_matrix_add(MatrixAddFn* fn, int rows, int cols, int ld_pad, wb::Rng& rng) {
  // A, B and C get different leading dimensions, so every stride must be the right one.
  const int lda = cols + ld_pad, ldb = cols + 2 * ld_pad, ldc = cols + 3 * ld_pad;
  const std::string what = "matrix_add rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                           " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc);
  const auto a = padded_random(rows, lda, rng), b = padded_random(rows, ldb, rng);
  wb::DeviceBuffer<float> da(a), db(b), dc(static_cast<size_t>(rows) * ldc);
  dc.poison();
  if (auto o = run(what, [&](cudaStream_t s) { fn(da.data(), lda, db.data(), ldb, dc.data(), ldc, rows, cols, s); });
      !o.passed()) {
    return o;
  }
  const auto padded = dc.download();
  std::vector<float> got(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) got[static_cast<size_t>(r) * cols + c] = padded[static_cast<size_t>(r) * ldc + c];
  }
  auto ref = [&](int64_t i) {
    const int64_t r = i / cols, c = i % cols;
    return double(a[r * lda + c]) + double(b[r * ldb + c]);
  };
  return verdict(what, wb::check_output(got, wb::Layout::matrix(rows, cols), ref, wb::tolerance_for(wb::DType::F32, 2)),
                 padding_writes(padded, rows, cols, ldc));
}

// --- benchmark problems: random inputs, allocated once, owned by the returned launch ---

Launch prepare_vector_add(VectorAddFn* fn, int n, uint64_t seed) {
  wb::Rng rng(seed);
  auto a = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(n, rng));
  auto b = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(n, rng));
  auto c = std::make_shared<wb::DeviceBuffer<float>>(n);
  c->poison();
  return [=](cudaStream_t s) { fn(a->data(), b->data(), c->data(), n, s); };
}

Launch prepare_rgb_to_grey(RgbToGreyFn* fn, int height, int width, uint64_t seed) {
  wb::Rng rng(seed);
  const size_t plane = static_cast<size_t>(height) * width;
  auto rgb = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(3 * plane, rng, 0.0f, 1.0f));
  auto grey = std::make_shared<wb::DeviceBuffer<float>>(plane);
  grey->poison();
  return [=](cudaStream_t s) { fn(rgb->data(), grey->data(), height, width, width, s); };
}

Launch prepare_matrix_add(MatrixAddFn* fn, int rows, int cols, uint64_t seed) {
  wb::Rng rng(seed);
  const size_t count = static_cast<size_t>(rows) * cols;
  auto a = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(count, rng));
  auto b = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(count, rng));
  auto c = std::make_shared<wb::DeviceBuffer<float>>(count);
  c->poison();
  return [=](cudaStream_t s) { fn(a->data(), cols, b->data(), cols, c->data(), cols, rows, cols, s); };
}

// --- benchmark problems for fair timing: new inputs before every timed launch ---

namespace {

// The generator of a Timed problem's input seeds: the run's seed and fresh entropy.
wb::Rng timing_rng(uint64_t seed) {
  std::random_device rd;
  return wb::Rng(seed ^ (uint64_t{rd()} << 32 | rd()));
}

// Output buffers of the timed problems are packed (leading dimension = width), so the
// whole buffer is the output and every element of it is checked.
struct TimedBuffers {
  std::vector<wb::DeviceBuffer<float>> in;
  wb::DeviceBuffer<float> out;
  wb::Rng rng;
  TimedBuffers(std::vector<size_t> in_counts, size_t out_count, uint64_t seed)
      : out(out_count), rng(timing_rng(seed)) {
    for (size_t n : in_counts) in.emplace_back(n);
  }
  // New input values in [lo, hi) and a poisoned output, on `s`.
  void refresh(cudaStream_t s, float lo, float hi) {
    for (auto& b : in) wb::fill_uniform(b.data(), b.size(), rng.next(), lo, hi, s);
    out.poison(s);
  }
};

}  // namespace

wb::bench::Timed prepare_timed_vector_add(VectorAddFn* fn, int n, uint64_t seed, const std::string& op) {
  auto buf = std::make_shared<TimedBuffers>(std::vector<size_t>{size_t(n), size_t(n)}, n, seed);
  const std::string what = op + " n=" + std::to_string(n);
  wb::bench::Timed t;
  t.launch = [=](cudaStream_t s) { fn(buf->in[0].data(), buf->in[1].data(), buf->out.data(), n, s); };
  t.next_inputs = [=](cudaStream_t s) { buf->refresh(s, -1.0f, 1.0f); };
  t.check_last = [=] {
    const auto a = buf->in[0].download(), b = buf->in[1].download(), got = buf->out.download();
    return verdict(what, wb::check_output(got, wb::Layout::vector(n),
                                          [&](int64_t i) { return double(a[i]) + double(b[i]); },
                                          wb::tolerance_for(wb::DType::F32, 2)));
  };
  return t;
}

wb::bench::Timed prepare_timed_rgb_to_grey(RgbToGreyFn* fn, int height, int width, uint64_t seed) {
  const size_t plane = static_cast<size_t>(height) * width;
  auto buf = std::make_shared<TimedBuffers>(std::vector<size_t>{3 * plane}, plane, seed);
  const std::string what = "rgb_to_grey height=" + std::to_string(height) + " width=" + std::to_string(width) +
                           " pitch=" + std::to_string(width);
  wb::bench::Timed t;
  t.launch = [=](cudaStream_t s) { fn(buf->in[0].data(), buf->out.data(), height, width, width, s); };
  t.next_inputs = [=](cudaStream_t s) { buf->refresh(s, 0.0f, 1.0f); };
  t.check_last = [=] {
    const auto rgb = buf->in[0].download(), got = buf->out.download();
    auto ref = [&](int64_t i) {
      return double(kRedWeight) * rgb[i] + double(kGreenWeight) * rgb[plane + i] + double(kBlueWeight) * rgb[2 * plane + i];
    };
    return verdict(what, wb::check_output(got, wb::Layout::matrix(height, width, "y", "x"), ref,
                                          wb::tolerance_for(wb::DType::F32, 3)));
  };
  return t;
}

wb::bench::Timed prepare_timed_matrix_add(MatrixAddFn* fn, int rows, int cols, uint64_t seed) {
  const size_t count = static_cast<size_t>(rows) * cols;
  auto buf = std::make_shared<TimedBuffers>(std::vector<size_t>{count, count}, count, seed);
  const std::string what = "matrix_add rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                           " lda=ldb=ldc=" + std::to_string(cols);
  wb::bench::Timed t;
  t.launch = [=](cudaStream_t s) {
    fn(buf->in[0].data(), cols, buf->in[1].data(), cols, buf->out.data(), cols, rows, cols, s);
  };
  t.next_inputs = [=](cudaStream_t s) { buf->refresh(s, -1.0f, 1.0f); };
  t.check_last = [=] {
    const auto a = buf->in[0].download(), b = buf->in[1].download(), got = buf->out.download();
    return verdict(what, wb::check_output(got, wb::Layout::matrix(rows, cols),
                                          [&](int64_t i) { return double(a[i]) + double(b[i]); },
                                          wb::tolerance_for(wb::DType::F32, 2)));
  };
  return t;
}

}  // namespace ch01
