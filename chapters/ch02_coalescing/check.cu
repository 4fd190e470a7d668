#include "check.cuh"

#include <algorithm>
#include <memory>
#include <random>
#include <type_traits>

#include "cuda/buffers.cuh"
#include "host/compare.h"
#include "host/tolerance.h"

namespace ch02 {
namespace {

// Every output buffer is followed by this many poisoned elements: a kernel whose bounds
// check uses the wrong dimension writes there, and the check says so.
constexpr size_t kGuard = 256;

// A copy or a transpose moves bits: the only right answer is the input element itself.
constexpr wb::Tolerance kExact{0.0, 0.0};

// Runs the launcher on a fresh stream; returns the non-pass outcome, or Pass.
wb::Outcome run(const std::string& what, const std::function<void(cudaStream_t)>& launch) {
  wb::Stream stream;
  return wb::run_launcher(what, launch, stream);
}

wb::Outcome verdict(const std::string& what, const wb::CheckResult& r, const std::string& extra) {
  if (r.ok && extra.empty()) return wb::Outcome::pass(r.summary());
  return wb::Outcome::wrong(what + " " + r.report() + extra);
}

// Elements of the guard zone (after the first `count`) that no longer hold the poison.
template <class T>
std::string guard_writes(const std::vector<T>& buf, size_t count) {
  size_t written = 0, first = 0;
  for (size_t i = count; i < buf.size(); ++i) {
    if (!wb::is_poison(buf[i]) && written++ == 0) first = i - count;
  }
  if (written == 0) return {};
  return "  and " + std::to_string(written) + " writes past the end of the output (the first " +
         std::to_string(first) + " elements after its last one): a bounds check is missing, or it tests the " +
         "wrong dimension\n";
}

std::vector<wb::BFloat16> random_bf16(size_t n, wb::Rng& rng) {
  const auto f = wb::random_floats(n, rng);
  std::vector<wb::BFloat16> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = wb::float_to_bf16(f[i]);
  return out;
}

std::string transpose_what(const char* op, int rows, int cols) {
  return std::string(op) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " (out is " +
         std::to_string(cols) + " x " + std::to_string(rows) + ", out[c][r] = in[r][c])";
}

// The output of a transpose is cols x rows; its element (out_row c, out_col r) is in[r][c].
template <class T, class Fn>
wb::Outcome check_transpose(const char* op, Fn* fn, int rows, int cols, const std::vector<T>& in) {
  const std::string what = transpose_what(op, rows, cols);
  const size_t count = static_cast<size_t>(rows) * cols;
  wb::DeviceBuffer<T> din(in), dout(count + kGuard);
  dout.poison();
  using Elem = std::conditional_t<std::is_same_v<T, float>, float, __nv_bfloat16>;
  const auto* src = reinterpret_cast<const Elem*>(din.data());
  auto* dst = reinterpret_cast<Elem*>(dout.data());
  if (auto o = run(what, [&](cudaStream_t s) { fn(src, dst, rows, cols, s); }); !o.passed()) return o;
  const auto got = dout.download();
  auto ref = [&](int64_t i) {
    const int64_t c = i / rows, r = i % rows;
    return wb::to_double(in[static_cast<size_t>(r) * cols + c]);
  };
  return verdict(what, wb::check_output(got, wb::Layout::matrix(cols, rows, "out_row", "out_col"), ref, kExact),
                 guard_writes(got, count));
}

}  // namespace

size_t strided_input_size(int n, int stride) {
  return n <= 0 ? 0 : static_cast<size_t>(n - 1) * stride + 1;
}

wb::Outcome check_strided_copy(StridedCopyFn* fn, int n, int stride, wb::Rng& rng) {
  const std::string what = "strided_copy n=" + std::to_string(n) + " stride=" + std::to_string(stride);
  const auto in = wb::random_floats(strided_input_size(n, stride), rng);
  wb::DeviceBuffer<float> din(in), dout(n + kGuard);
  dout.poison();
  if (auto o = run(what, [&](cudaStream_t s) { fn(din.data(), dout.data(), n, stride, s); }); !o.passed()) {
    return o;
  }
  const auto got = dout.download();
  auto ref = [&](int64_t i) { return double(in[static_cast<size_t>(i) * stride]); };
  return verdict(what, wb::check_output(got, wb::Layout::vector(n), ref, kExact), guard_writes(got, n));
}

wb::Outcome check_transpose_f32(TransposeF32Fn* fn, int rows, int cols, wb::Rng& rng) {
  return check_transpose("transpose_f32", fn, rows, cols,
                         wb::random_floats(static_cast<size_t>(rows) * cols, rng));
}

wb::Outcome check_transpose_bf16(TransposeBF16Fn* fn, int rows, int cols, wb::Rng& rng) {
  return check_transpose("transpose_bf16", fn, rows, cols, random_bf16(static_cast<size_t>(rows) * cols, rng));
}

// --- benchmark problems: random inputs, allocated once, owned by the returned launch ---

Launch prepare_strided_copy(StridedCopyFn* fn, int n, int stride, uint64_t seed) {
  wb::Rng rng(seed);
  auto in = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(strided_input_size(n, stride), rng));
  auto out = std::make_shared<wb::DeviceBuffer<float>>(n);
  out->poison();
  return [=](cudaStream_t s) { fn(in->data(), out->data(), n, stride, s); };
}

Launch prepare_transpose_f32(TransposeF32Fn* fn, int rows, int cols, uint64_t seed) {
  wb::Rng rng(seed);
  const size_t count = static_cast<size_t>(rows) * cols;
  auto in = std::make_shared<wb::DeviceBuffer<float>>(wb::random_floats(count, rng));
  auto out = std::make_shared<wb::DeviceBuffer<float>>(count);
  out->poison();
  return [=](cudaStream_t s) { fn(in->data(), out->data(), rows, cols, s); };
}

Launch prepare_transpose_bf16(TransposeBF16Fn* fn, int rows, int cols, uint64_t seed) {
  wb::Rng rng(seed);
  const size_t count = static_cast<size_t>(rows) * cols;
  auto in = std::make_shared<wb::DeviceBuffer<wb::BFloat16>>(random_bf16(count, rng));
  auto out = std::make_shared<wb::DeviceBuffer<wb::BFloat16>>(count);
  out->poison();
  return [=](cudaStream_t s) {
    fn(reinterpret_cast<const __nv_bfloat16*>(in->data()), reinterpret_cast<__nv_bfloat16*>(out->data()), rows,
       cols, s);
  };
}


// --- benchmark problems for fair timing: new inputs before every timed launch ---

namespace {

// The generator of a Timed problem's input seeds: the run's seed and fresh entropy.
wb::Rng timing_rng(uint64_t seed) {
  std::random_device rd;
  return wb::Rng(seed ^ (uint64_t{rd()} << 32 | rd()));
}

// BF16 values uniform in [-1, 1), from a counter-based hash of (seed, index), on the GPU.
__global__ void fill_uniform_bf16_kernel(__nv_bfloat16* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = __float2bfloat16(static_cast<float>(z >> 40) * 0x1.0p-23f - 1.0f);
  }
}

void fill_uniform(wb::DeviceBuffer<float>& b, wb::Rng& rng, cudaStream_t s) {
  wb::fill_uniform(b.data(), b.size(), rng.next(), -1.0f, 1.0f, s);
}

void fill_uniform(wb::DeviceBuffer<wb::BFloat16>& b, wb::Rng& rng, cudaStream_t s) {
  if (b.size() == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((b.size() + 255) / 256, 8192));
  fill_uniform_bf16_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<__nv_bfloat16*>(b.data()), b.size(), rng.next());
  WB_CHECK_LAUNCH();
}

template <class T>
struct TimedBuffers {
  wb::DeviceBuffer<T> in, out;
  wb::Rng rng;
  TimedBuffers(size_t in_count, size_t out_count, uint64_t seed) : in(in_count), out(out_count), rng(timing_rng(seed)) {}
  void refresh(cudaStream_t s) {
    fill_uniform(in, rng, s);
    out.poison(s);
  }
};

template <class T, class Fn>
wb::bench::Timed timed_transpose(const char* op, Fn* fn, int rows, int cols, uint64_t seed) {
  const size_t count = static_cast<size_t>(rows) * cols;
  auto buf = std::make_shared<TimedBuffers<T>>(count, count, seed);
  const std::string what = transpose_what(op, rows, cols);
  using Elem = std::conditional_t<std::is_same_v<T, float>, float, __nv_bfloat16>;
  wb::bench::Timed t;
  t.launch = [=](cudaStream_t s) {
    fn(reinterpret_cast<const Elem*>(buf->in.data()), reinterpret_cast<Elem*>(buf->out.data()), rows, cols, s);
  };
  t.next_inputs = [=](cudaStream_t s) { buf->refresh(s); };
  t.check_last = [=] {
    const auto in = buf->in.download(), got = buf->out.download();
    auto ref = [&](int64_t i) { return wb::to_double(in[static_cast<size_t>(i % rows) * cols + i / rows]); };
    return verdict(what, wb::check_output(got, wb::Layout::matrix(cols, rows, "out_row", "out_col"), ref, kExact),
                   {});
  };
  return t;
}

}  // namespace

wb::bench::Timed prepare_timed_strided_copy(StridedCopyFn* fn, int n, int stride, uint64_t seed) {
  auto buf = std::make_shared<TimedBuffers<float>>(strided_input_size(n, stride), n, seed);
  const std::string what = "strided_copy n=" + std::to_string(n) + " stride=" + std::to_string(stride);
  wb::bench::Timed t;
  t.launch = [=](cudaStream_t s) { fn(buf->in.data(), buf->out.data(), n, stride, s); };
  t.next_inputs = [=](cudaStream_t s) { buf->refresh(s); };
  t.check_last = [=] {
    const auto in = buf->in.download(), got = buf->out.download();
    auto ref = [&](int64_t i) { return double(in[static_cast<size_t>(i) * stride]); };
    return verdict(what, wb::check_output(got, wb::Layout::vector(n), ref, kExact), {});
  };
  return t;
}

wb::bench::Timed prepare_timed_transpose_f32(TransposeF32Fn* fn, int rows, int cols, uint64_t seed) {
  return timed_transpose<float>("transpose_f32", fn, rows, cols, seed);
}

wb::bench::Timed prepare_timed_transpose_bf16(TransposeBF16Fn* fn, int rows, int cols, uint64_t seed) {
  return timed_transpose<wb::BFloat16>("transpose_bf16", fn, rows, cols, seed);
}

}  // namespace ch02
