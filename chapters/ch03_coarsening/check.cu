#include "check.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>

#include "cuda/buffers.cuh"
#include "host/compare.h"
#include "host/tolerance.h"

namespace ch03 {
namespace {

constexpr int kGuard = 64;                 // elements past the end of every input
constexpr float kGuardValue = 0x1p100f;    // about 1.27e30: larger than any sum or max here

// --- inputs ------------------------------------------------------------------------------

// A large value for the last element of a sum: +-[16, 32).
float tail_marker(wb::Rng& rng) {
  const float m = static_cast<float>(rng.uniform(16.0, 32.0));
  return (rng.next() & 1) ? m : -m;
}

// n values, then the guard. Sums: uniform in [-1, 1) with the tail marker last. Max: uniform
// in [-2, -1), with a single larger value (in [-1, -0.5)) where `at` says.
std::vector<float> make_values(Reduction op, int n, wb::Rng& rng, MaxAt at) {
  std::vector<float> v;
  if (op == Reduction::MaxF32) {
    v = wb::random_floats(static_cast<size_t>(n), rng, -2.0f, -1.0f);
    if (n > 0) {
      const int64_t pos = at == MaxAt::First ? 0 : at == MaxAt::Last ? n - 1 : rng.range(0, n - 1);
      v[static_cast<size_t>(pos)] = static_cast<float>(rng.uniform(-1.0, -0.5));
    }
  } else {
    v = wb::random_floats(static_cast<size_t>(n), rng, -1.0f, 1.0f);
    if (n > 0) v.back() = tail_marker(rng);
  }
  v.resize(static_cast<size_t>(n) + kGuard, kGuardValue);
  return v;
}

std::vector<wb::BFloat16> to_bf16(const std::vector<float>& v) {
  std::vector<wb::BFloat16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = wb::float_to_bf16(v[i]);
  return out;
}

// A zero-filled workspace of the size the set asks for (null when it asks for none).
struct Workspace {
  wb::DeviceBuffer<unsigned char> buf;
  explicit Workspace(size_t bytes) : buf(bytes) {
    if (bytes > 0) CUDA_CHECK(cudaMemset(buf.data(), 0, bytes));
  }
  void* data() { return buf.size() ? buf.data() : nullptr; }
  size_t bytes() const { return buf.size(); }
};

// One full-reduction problem on the device: input (with its guard), output, workspace.
struct ReduceProblem {
  Kernels k;
  Reduction op;
  int n;
  wb::DeviceBuffer<float> xf;
  wb::DeviceBuffer<wb::BFloat16> xb;
  wb::DeviceBuffer<float> out{1};
  Workspace ws;

  ReduceProblem(const Kernels& k_, Reduction op_, int n_, const std::vector<float>& values)
      : k(k_), op(op_), n(n_), ws(k_.workspace_bytes ? k_.workspace_bytes(n_) : 0) {
    if (op == Reduction::SumBf16) {
      xb = wb::DeviceBuffer<wb::BFloat16>(to_bf16(values));
    } else {
      xf = wb::DeviceBuffer<float>(values);
    }
  }
  void launch(cudaStream_t s) {
    switch (op) {
      case Reduction::SumF32: return k.sum_f32(xf.data(), n, out.data(), ws.data(), ws.bytes(), s);
      case Reduction::MaxF32: return k.max_f32(xf.data(), n, out.data(), ws.data(), ws.bytes(), s);
      case Reduction::SumBf16:
        return k.sum_bf16(reinterpret_cast<const __nv_bfloat16*>(xb.data()), n, out.data(), ws.data(), ws.bytes(), s);
    }
  }
};

// The float64 reference of x[0, n): the device's values (for BF16, after rounding).
double reference(Reduction op, int n, const float* x) {
  if (op == Reduction::MaxF32) {
    double m = -INFINITY;
    for (int i = 0; i < n; ++i) m = std::max(m, double(x[i]));
    return m;
  }
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  return s;
}

// What the device holds, as floats: BF16 inputs rounded.
std::vector<float> as_seen_by_device(Reduction op, std::vector<float> values) {
  if (op == Reduction::SumBf16) {
    for (auto& v : values) v = wb::bf16_to_float(wb::float_to_bf16(v));
  }
  return values;
}

wb::Tolerance tolerance_of(Reduction op, int n) {
  return op == Reduction::MaxF32 ? wb::Tolerance{0.0, 0.0} : wb::tolerance_for(wb::DType::F32, n);
}

std::string fmt(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Empty when `got` is right; otherwise what is wrong with it.
std::string scalar_fault(float got, double expected, const wb::Tolerance& tol) {
  if (wb::is_poison(got)) {
    return "never written: *out still holds the poison (the launcher must write it, also when n = 0)";
  }
  if (std::isinf(expected)) {  // the max of nothing
    if (got == expected) return {};
    return "wrong result: expected -inf (the max of no elements, the identity of max), got " + fmt(got);
  }
  if (tol.allows(expected, got)) return {};
  std::string m = "wrong result: expected " + fmt(expected) + " (float64), got " + fmt(got);
  if (std::isfinite(got)) m += ", off by " + fmt(std::fabs(got - expected));
  m += "; tolerance " + tol.describe();
  if (std::isfinite(got) && std::fabs(got) > 1e29) {
    m += "\n  a result near 1e30 means the kernel used elements past x[n-1]: the harness puts 2^100 there as a guard";
  }
  return m;
}

// Runs the launcher once on a fresh stream; returns the non-pass outcome, or Pass.
wb::Outcome run(const std::string& what, const std::function<void(cudaStream_t)>& launch) {
  wb::Stream stream;
  return wb::run_launcher(what, launch, stream);
}

std::string run_label(int r, int runs) {
  return runs > 1 ? " (run " + std::to_string(r + 1) + " of " + std::to_string(runs) + ")" : "";
}

// Hints for a result that went wrong on a later run, or changed between runs.
std::string repeat_hints(int first_bad, int runs, size_t distinct) {
  std::string h;
  if (distinct > 1) {
    h += "\n  the result changed from run to run on the same input (" + std::to_string(distinct) + " different values in " +
         std::to_string(runs) + " runs): a race. A missing __syncthreads()? Look with\n"
         "    compute-sanitizer --tool racecheck <test binary> --gtest_filter=<this test>";
  }
  if (first_bad > 0) {
    h += "\n  run 1 was right and run " + std::to_string(first_bad + 1) +
         " was wrong on the same input and workspace: does the launcher leave something in the workspace "
         "(a counter, partial sums) that the next call trips on? Set it back to zero before the kernel finishes.";
  }
  return h;
}

std::string what_of(Reduction op, int n, MaxAt at) {
  std::string w = std::string(reduction_name(op)) + " n=" + std::to_string(n);
  if (op == Reduction::MaxF32 && n > 1) {
    w += at == MaxAt::First ? " (max at the first element)" : at == MaxAt::Last ? " (max at the last element)"
                                                                               : " (max at a random position)";
  }
  return w;
}

}  // namespace

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::SumF32: return "sum_f32";
    case Reduction::MaxF32: return "max_f32";
    case Reduction::SumBf16: return "sum_bf16";
  }
  return "?";
}

bool has(const Kernels& k, Reduction r) {
  switch (r) {
    case Reduction::SumF32: return k.sum_f32 != nullptr;
    case Reduction::MaxF32: return k.max_f32 != nullptr;
    case Reduction::SumBf16: return k.sum_bf16 != nullptr;
  }
  return false;
}

wb::Outcome check_reduce(const Kernels& k, Reduction op, int n, wb::Rng& rng, int runs, MaxAt max_at) {
  const std::string what = what_of(op, n, max_at);
  const auto values = make_values(op, n, rng, max_at);
  const double expected = reference(op, n, as_seen_by_device(op, values).data());
  const wb::Tolerance tol = tolerance_of(op, n);
  ReduceProblem p(k, op, n, values);

  std::set<uint32_t> distinct;
  int first_bad = -1;
  std::string first_fault;
  for (int r = 0; r < runs; ++r) {
    p.out.poison();
    CUDA_CHECK(cudaDeviceSynchronize());  // the launch runs on another stream: poison first
    if (auto o = run(what + run_label(r, runs), [&](cudaStream_t s) { p.launch(s); }); !o.passed()) return o;
    const float got = p.out.download()[0];
    if (!wb::is_poison(got)) {  // results actually written, compared bit for bit
      uint32_t bits;
      std::memcpy(&bits, &got, sizeof bits);
      distinct.insert(bits);
    }
    if (first_bad < 0) {
      if (auto fault = scalar_fault(got, expected, tol); !fault.empty()) first_bad = r, first_fault = std::move(fault);
    }
  }
  if (first_bad < 0) return wb::Outcome::pass("within " + tol.describe() + " in " + std::to_string(runs) + " runs");
  return wb::Outcome::wrong(what + run_label(first_bad, runs) + ": " + first_fault +
                            repeat_hints(first_bad, runs, distinct.size()));
}

// --- row sums ------------------------------------------------------------------------------

namespace {

// rows x cols values uniform in [-1, 1), the last column of each row a tail marker, then
// the guard.
std::vector<float> make_matrix(int rows, int cols, wb::Rng& rng) {
  const size_t count = static_cast<size_t>(rows) * cols;
  auto v = wb::random_floats(count, rng, -1.0f, 1.0f);
  if (cols > 0) {
    for (int r = 0; r < rows; ++r) v[static_cast<size_t>(r) * cols + cols - 1] = tail_marker(rng);
  }
  v.resize(count + kGuard, kGuardValue);
  return v;
}

struct RowProblem {
  Kernels k;
  int rows, cols;
  wb::DeviceBuffer<float> x, out;
  Workspace ws;
  RowProblem(const Kernels& k_, int rows_, int cols_, const std::vector<float>& values)
      : k(k_), rows(rows_), cols(cols_), x(values), out(static_cast<size_t>(rows_)),
        ws(k_.row_workspace_bytes ? k_.row_workspace_bytes(rows_, cols_) : 0) {}
  void launch(cudaStream_t s) { k.row_sum(x.data(), rows, cols, out.data(), ws.data(), ws.bytes(), s); }
};

}  // namespace

wb::Outcome check_row_sum(const Kernels& k, int rows, int cols, wb::Rng& rng, int runs) {
  const std::string what = "row_sum rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
  const auto values = make_matrix(rows, cols, rng);
  std::vector<double> ref(static_cast<size_t>(rows), 0.0);
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    const float* row = values.data() + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) s += row[c];
    ref[static_cast<size_t>(r)] = s;
  }
  const wb::Tolerance tol = wb::tolerance_for(wb::DType::F32, cols);
  RowProblem p(k, rows, cols, values);

  std::set<std::vector<float>> distinct;
  int first_bad = -1;
  std::string first_report;
  for (int r = 0; r < runs; ++r) {
    p.out.poison();
    CUDA_CHECK(cudaDeviceSynchronize());  // the launch runs on another stream: poison first
    if (auto o = run(what + run_label(r, runs), [&](cudaStream_t s) { p.launch(s); }); !o.passed()) return o;
    const auto got = p.out.download();
    const auto res = wb::check_output(got, wb::Layout::vector(rows, "row"),
                                      [&](int64_t i) { return ref[static_cast<size_t>(i)]; }, tol);
    if (res.unwritten == 0 && rows <= (1 << 16)) distinct.insert(got);  // bit for bit, small outputs only
    if (!res.ok && first_bad < 0) first_bad = r, first_report = res.report();
  }
  if (first_bad < 0) return wb::Outcome::pass("every row within " + tol.describe() + " in " + std::to_string(runs) + " runs");
  return wb::Outcome::wrong(what + run_label(first_bad, runs) + " " + first_report +
                            repeat_hints(first_bad, runs, distinct.size()));
}

// --- benchmark problems: random inputs, allocated once, owned by the returned launch -----

Launch prepare_reduce(const Kernels& k, Reduction op, int n, uint64_t seed) {
  wb::Rng rng(seed);
  auto p = std::make_shared<ReduceProblem>(k, op, n, make_values(op, n, rng, MaxAt::Random));
  p->out.poison();
  CUDA_CHECK(cudaDeviceSynchronize());  // the poison and the zeroed workspace are in place before any launch
  return [p](cudaStream_t s) { p->launch(s); };
}

Launch prepare_row_sum(const Kernels& k, int rows, int cols, uint64_t seed) {
  wb::Rng rng(seed);
  auto p = std::make_shared<RowProblem>(k, rows, cols, make_matrix(rows, cols, rng));
  p->out.poison();
  CUDA_CHECK(cudaDeviceSynchronize());  // the poison and the zeroed workspace are in place before any launch
  return [p](cudaStream_t s) { p->launch(s); };
}

// --- benchmark problems for fair timing: new inputs before every timed launch ------------

namespace {

// The generator of a timed problem's input seeds: the run's seed and fresh entropy.
wb::Rng timing_rng(uint64_t seed) {
  std::random_device rd;
  return wb::Rng(seed ^ (uint64_t{rd()} << 32 | rd()));
}

// BF16 values uniform in [lo, hi), from `seed` and each element's index (splitmix64).
__global__ void fill_bf16_kernel(__nv_bfloat16* p, size_t n, uint64_t seed, float lo, float span) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = __float2bfloat16_rn(lo + span * (static_cast<float>(z >> 40) * 0x1.0p-24f));
  }
}

void fill_bf16(wb::BFloat16* p, size_t n, uint64_t seed, float lo, float hi, cudaStream_t s) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 8192));
  fill_bf16_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<__nv_bfloat16*>(p), n, seed, lo, hi - lo);
  WB_CHECK_LAUNCH();
}

}  // namespace

wb::bench::Timed prepare_timed_reduce(const Kernels& k, Reduction op, int n, uint64_t seed) {
  wb::Rng rng(seed);
  auto p = std::make_shared<ReduceProblem>(k, op, n, make_values(op, n, rng, MaxAt::Random));
  auto gen = std::make_shared<wb::Rng>(timing_rng(seed));
  CUDA_CHECK(cudaDeviceSynchronize());
  const float lo = op == Reduction::MaxF32 ? -2.0f : -1.0f, hi = op == Reduction::MaxF32 ? -1.0f : 1.0f;
  const std::string what = what_of(op, n, MaxAt::Random);
  wb::bench::Timed t;
  t.launch = [p](cudaStream_t s) { p->launch(s); };
  t.next_inputs = [p, gen, op, n, lo, hi](cudaStream_t s) {
    if (op == Reduction::SumBf16) {
      fill_bf16(p->xb.data(), static_cast<size_t>(n), gen->next(), lo, hi, s);
    } else {
      wb::fill_uniform(p->xf.data(), static_cast<size_t>(n), gen->next(), lo, hi, s);
    }
    p->out.poison(s);
  };
  t.check_last = [p, op, n, what] {
    std::vector<float> x;
    if (op == Reduction::SumBf16) {
      for (const auto& b : p->xb.download()) x.push_back(wb::bf16_to_float(b));
    } else {
      x = p->xf.download();
    }
    const float got = p->out.download()[0];
    if (auto fault = scalar_fault(got, reference(op, n, x.data()), tolerance_of(op, n)); !fault.empty()) {
      return wb::Outcome::wrong(what + ": " + fault);
    }
    return wb::Outcome::pass();
  };
  return t;
}

wb::bench::Timed prepare_timed_row_sum(const Kernels& k, int rows, int cols, uint64_t seed) {
  wb::Rng rng(seed);
  auto p = std::make_shared<RowProblem>(k, rows, cols, make_matrix(rows, cols, rng));
  auto gen = std::make_shared<wb::Rng>(timing_rng(seed));
  CUDA_CHECK(cudaDeviceSynchronize());
  const size_t count = static_cast<size_t>(rows) * cols;
  const std::string what = "row_sum rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
  wb::bench::Timed t;
  t.launch = [p](cudaStream_t s) { p->launch(s); };
  t.next_inputs = [p, gen, count](cudaStream_t s) {
    wb::fill_uniform(p->x.data(), count, gen->next(), -1.0f, 1.0f, s);
    p->out.poison(s);
  };
  t.check_last = [p, rows, cols, what] {
    const auto x = p->x.download(), got = p->out.download();
    auto ref = [&](int64_t r) {
      double s = 0;
      for (int c = 0; c < cols; ++c) s += x[static_cast<size_t>(r) * cols + c];
      return s;
    };
    const auto res = wb::check_output(got, wb::Layout::vector(rows, "row"), ref, wb::tolerance_for(wb::DType::F32, cols));
    return res.ok ? wb::Outcome::pass(res.summary()) : wb::Outcome::wrong(what + " " + res.report());
  };
  return t;
}

}  // namespace ch03
