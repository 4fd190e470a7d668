#include "check.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <unordered_map>

#include "cublas_gemm.cuh"
#include "cuda/buffers.cuh"
#include "host/compare.h"
#include "host/dtype.h"
#include "host/tolerance.h"

namespace ch05 {
namespace {

// Host storage for each device element type: the same bits, without CUDA's headers' types.
template <class T> struct HostOf { using type = T; };
template <> struct HostOf<__half> { using type = wb::Half; };
template <> struct HostOf<__nv_bfloat16> { using type = wb::BFloat16; };
template <class T> using host_t = typename HostOf<T>::type;

template <class H> constexpr wb::DType dtype_of() {
  if constexpr (std::is_same_v<H, wb::Half>) return wb::DType::F16;
  else if constexpr (std::is_same_v<H, wb::BFloat16>) return wb::DType::BF16;
  else if constexpr (std::is_same_v<H, int8_t>) return wb::DType::I8;
  else if constexpr (std::is_same_v<H, int32_t>) return wb::DType::I32;
  else return wb::DType::F32;
}

// Rounds a float to the host type H (round to nearest even for the 16-bit floats).
template <class H> H round_to(float v) {
  if constexpr (std::is_same_v<H, wb::Half>) return wb::float_to_half(v);
  else if constexpr (std::is_same_v<H, wb::BFloat16>) return wb::float_to_bf16(v);
  else if constexpr (std::is_integral_v<H>) return static_cast<H>(std::lrint(v));
  else return v;
}

// The pointer types a launcher takes, from the host buffers that hold the same bits.
template <class T, class H> const T* dev(const wb::DeviceBuffer<H>& b) { return reinterpret_cast<const T*>(b.data()); }
template <class T, class H> T* dev(wb::DeviceBuffer<H>& b) { return reinterpret_cast<T*>(b.data()); }

// A random rows x cols matrix of type H, and the same values as floats (exact: every
// value of H is a float). Floats are uniform in [-1, 1) before rounding; INT8 uses its
// whole range. `symmetric` (rows == cols) mirrors the upper triangle.
template <class H>
void random_matrix(int rows, int cols, bool symmetric, wb::Rng& rng, std::vector<H>& h, std::vector<float>& f) {
  h.resize(static_cast<size_t>(rows) * cols);
  f.resize(h.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const size_t at = static_cast<size_t>(r) * cols + c;
      if (symmetric && c < r) {
        const size_t mirror = static_cast<size_t>(c) * cols + r;
        h[at] = h[mirror];
        f[at] = f[mirror];
        continue;
      }
      if constexpr (std::is_same_v<H, int8_t>) {
        h[at] = static_cast<int8_t>(rng.range(-128, 127));
      } else {
        h[at] = round_to<H>(static_cast<float>(rng.uniform(-1.0, 1.0)));
      }
      f[at] = static_cast<float>(wb::to_double(h[at]));
    }
  }
}

// C for the output type: floats in [-1, 1) rounded to Out, integers in [-1000, 1000].
template <class H> std::vector<H> random_addend(size_t n, wb::Rng& rng) {
  std::vector<H> c(n);
  for (auto& v : c) {
    if constexpr (std::is_integral_v<H>) v = static_cast<H>(rng.range(-1000, 1000));
    else v = round_to<H>(static_cast<float>(rng.uniform(-1.0, 1.0)));
  }
  return c;
}

// A float64 dot product of x[0..k) and y[0..k), four partial sums for speed.
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

// Every element while that is cheap (about 2^28 multiply-adds on the host); beyond, a
// sample whose size shrinks as K grows, plus the first and last rows.
wb::CheckOptions options_for(int m, int n, int k, wb::Rng& rng) {
  wb::CheckOptions opt;
  opt.sample_seed = rng.next();
  if (double(m) * n * k <= double(int64_t{1} << 28)) {
    opt.full_check_limit = int64_t{m} * n;
  } else {
    opt.full_check_limit = 0;
    opt.samples = std::clamp<int64_t>((int64_t{1} << 27) / k, 4096, int64_t{1} << 18);
  }
  return opt;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

bool verbose() {
  const char* v = std::getenv("WORKBOOK_VERBOSE");
  return v != nullptr && *v != '\0' && *v != '0';
}

// Elements poisoned on each side of D: a kernel that writes outside the M x N matrix
// changes them.
constexpr size_t kGuard = 256;

template <class In, class Out>
wb::Outcome check_typed(GemmFn<In, Out>* fn, Types t, const GemmCase& g, wb::Rng& rng) {
  using HIn = host_t<In>;
  using HOut = host_t<Out>;
  constexpr bool kFloatOut = !std::is_integral_v<HOut>;
  const int M = g.m, N = g.n, K = g.k;
  const std::string what = g.text(t);
  if (g.symmetric && !(M == N && N == K)) throw std::invalid_argument(what + ": symmetric inputs need M == N == K");

  std::vector<HIn> ha, hb;
  std::vector<float> fa, fb;
  random_matrix(M, K, g.symmetric, rng, ha, fa);
  random_matrix(K, N, g.symmetric, rng, hb, fb);
  const std::vector<HOut> hc = g.with_c ? random_addend<HOut>(size_t(M) * N, rng) : std::vector<HOut>{};
  // B transposed, so that each reference dot product reads two contiguous rows.
  std::vector<float> bt(fb.size());
  for (int p = 0; p < K; ++p) {
    for (int j = 0; j < N; ++j) bt[size_t(j) * K + p] = fb[size_t(p) * N + j];
  }

  const size_t count = size_t(M) * N;
  wb::DeviceBuffer<HIn> da(ha), db(hb);
  wb::DeviceBuffer<HOut> dc(hc);
  wb::DeviceBuffer<HOut> d1(count + 2 * kGuard), d2(count + 2 * kGuard);
  d1.poison();
  d2.poison();
  CUDA_CHECK(cudaDeviceSynchronize());  // the uploads are complete before the kernel's stream starts
  const Out* c_ptr = g.with_c ? dev<Out>(dc) : nullptr;

  {
    wb::Stream stream;
    for (auto* d : {&d1, &d2}) {
      Out* out = dev<Out>(*d) + kGuard;
      auto launch = [&](cudaStream_t s) { fn(M, N, K, dev<In>(da), dev<In>(db), c_ptr, out, s); };
      if (auto o = wb::run_launcher(what, launch, stream); !o.passed()) return o;
    }
  }
  const auto raw1 = d1.download(), raw2 = d2.download();
  std::vector<HOut> got(raw1.begin() + kGuard, raw1.begin() + kGuard + count);

  // Writes outside D, and elements that differ between the two runs.
  int64_t outside = 0, differ = 0, first_differ = -1;
  for (size_t i = 0; i < kGuard; ++i) {
    outside += !wb::is_poison(raw1[i]) + !wb::is_poison(raw1[kGuard + count + i]);
  }
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(&raw1[kGuard + i], &raw2[kGuard + i], sizeof(HOut)) != 0 && differ++ == 0) first_differ = i;
  }

  // The float64 reference, remembered per element so that the cuBLAS comparison and the
  // diagnosis below reuse the same sampled elements.
  std::unordered_map<int64_t, double> refs;
  auto ref_k = [&](int64_t idx, int k_used) {
    const int64_t i = idx / N, j = idx % N;
    const double c = g.with_c ? wb::to_double(hc[idx]) : 0.0;
    return dot(fa.data() + i * K, bt.data() + j * K, k_used) + c;
  };
  auto ref = [&](int64_t idx) {
    auto it = refs.find(idx);
    if (it != refs.end()) return it->second;
    return refs[idx] = ref_k(idx, K);
  };
  const auto tol = wb::tolerance_for(dtype_of<HOut>(), int64_t{K} + (g.with_c ? 1 : 0), 1.0);
  const wb::CheckResult r = wb::check_output(got, wb::Layout::matrix(M, N), ref, tol, options_for(M, N, K, rng));

  std::string extra;
  bool ok = r.ok;
  if (outside > 0) {
    ok = false;
    extra += "  and " + std::to_string(outside) + " writes outside D (within " + std::to_string(kGuard) +
             " elements before its start or after its end): check the bounds of every store\n";
  }
  if (differ > 0) {
    ok = false;
    extra += "  the output differs between two runs on the same inputs in " + std::to_string(differ) +
             " elements (first at " + wb::Layout::matrix(M, N).coords(first_differ) +
             "): a race. A missing cp.async.wait_group or __syncthreads lets a warp read shared memory "
             "before it was written, or overwrite a tile another warp still reads.\n";
  }

  // The cuBLAS yardstick: its largest error on the same elements and the same inputs.
  if constexpr (kFloatOut) {
    double err = 0, max_ref = 0;
    bool finite = true;
    for (const auto& [idx, e] : refs) {
      const double v = wb::to_double(got[idx]);
      finite = finite && std::isfinite(v);
      err = std::max(err, std::fabs(v - e));
      max_ref = std::max(max_ref, std::fabs(e));
    }
    if (finite && refs.size() >= 256) {
      wb::DeviceBuffer<HOut> dl(count);
      dl.poison();  // cuBLAS's Hopper kernels store with TMA, which initcheck does not see
      {
        wb::Stream stream;
        cublas::gemm<In, Out>(M, N, K, dev<In>(da), dev<In>(db), c_ptr, dev<Out>(dl), stream);
        CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      const auto lib = dl.download();
      double lib_err = 0;
      for (const auto& [idx, e] : refs) lib_err = std::max(lib_err, std::fabs(wb::to_double(lib[idx]) - e));
      // 4x cuBLAS's error, plus one rounding step of the output at the largest value, plus
      // the FP32 tolerance's absolute term: on long, skinny problems cuBLAS splits K over
      // several blocks, which makes its error smaller than any single FP32 accumulator's
      // (seen: 67 x 129 x 4097, cuBLAS 2e-5, every kernel here 5e-4). A kernel that
      // accumulates in FP16 or BF16 is off by 10^2 to 10^4 times more and still fails.
      const double fp32_accumulation = wb::tolerance_for(wb::DType::F32, K).atol;
      const double allowed =
          4.0 * lib_err + 2.0 * wb::unit_roundoff(dtype_of<HOut>()) * max_ref + fp32_accumulation;
      if (verbose()) {
        std::fprintf(stderr, "[ch05] %s: max error %.3g, cuBLAS %.3g, allowed %.3g (%zu elements)\n", what.c_str(),
                     err, lib_err, allowed, refs.size());
      }
      if (err > allowed) {
        ok = false;
        extra += "  the largest error, " + number(err) + ", is more than 4x cuBLAS's largest error (" +
                 number(lib_err) + ") on the same inputs plus one rounding step and an FP32 accumulation "
                 "allowance (allowed " + number(allowed) +
                 "): is every product accumulated in FP32, and rounded to the output type only once, at the end?\n";
      }
    }
  }

  if (ok) return wb::Outcome::pass(r.summary());

  // Diagnosis: does the output match a plausible wrong computation on every listed element?
  auto all_listed_match = [&](const std::function<double(int64_t)>& alt) {
    int matched = 0;
    for (const auto& m : r.first) {
      if (m.fault != wb::Fault::Wrong) continue;
      if (!tol.allows(alt(m.index), m.got)) return false;
      ++matched;
    }
    return matched > 0;
  };
  std::string hints;
  if (r.wrong > 0) {
    for (int tile : {16, 32, 64, 128, 256}) {
      const int rest = K % tile;
      if (rest == 0) continue;
      if (all_listed_match([&](int64_t idx) { return ref_k(idx, K - rest); })) {
        hints += "  diagnosis: the output equals A * B without the last K % " + std::to_string(tile) + " = " +
                 std::to_string(rest) + " terms: the K remainder is left out. K = " + std::to_string(K) +
                 " is not a multiple of " + std::to_string(tile) +
                 "; load the last partial K tile with zeros past K instead of skipping it.\n";
        break;
      }
    }
    auto a_transposed = [&](int64_t idx) {  // A read as column-major (needs M == K)
      const int64_t i = idx / N, j = idx % N;
      double s = g.with_c ? wb::to_double(hc[idx]) : 0.0;
      for (int p = 0; p < K; ++p) s += double(fa[size_t(p) * K + i]) * bt[size_t(j) * K + p];
      return s;
    };
    auto b_transposed = [&](int64_t idx) {  // B read as column-major (needs N == K)
      const int64_t i = idx / N, j = idx % N;
      double s = g.with_c ? wb::to_double(hc[idx]) : 0.0;
      for (int p = 0; p < K; ++p) s += double(fa[size_t(i) * K + p]) * bt[size_t(p) * K + j];
      return s;
    };
    if (hints.empty() && M == K && all_listed_match(a_transposed)) {
      hints += "  diagnosis: the output equals A^T * B: A was read as column-major. A is row-major (element "
               "(i, p) at A[i * K + p]): use wmma::row_major for matrix_a, with ldm = K.\n";
    } else if (hints.empty() && N == K && all_listed_match(b_transposed)) {
      hints += "  diagnosis: the output equals A * B^T: B was read as column-major. B is row-major (element "
               "(p, j) at B[p * N + j]): use wmma::row_major for matrix_b, with ldm = N.\n";
    } else if (hints.empty() && r.wrong * 10 > r.checked * 9) {
      hints += "  hint: nearly every element is wrong: check the fragment layouts (A and B are row-major: "
               "wmma::row_major, ldm = K for A and N for B) and the tile offsets along K.\n";
    }
  }
  if (r.unwritten > 0) {
    hints += "  hint: unwritten elements: does the grid cover every tile of D, rounding up (a ceiling "
             "division), and does each warp store every element of its tiles that lies inside D?\n";
  }
  return wb::Outcome::wrong(what + " " + r.report() + extra + hints);
}

// Device-side random fill for the benchmark's large inputs (fast, reproducible from the seed).
template <class T>
__global__ void fill_random_kernel(T* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    if constexpr (std::is_same_v<T, int8_t>) {
      p[i] = static_cast<int8_t>(z >> 56);
    } else {
      const float u = static_cast<float>(z >> 40) * 0x1.0p-24f * 2.0f - 1.0f;  // [-1, 1)
      if constexpr (std::is_same_v<T, __half>) p[i] = __float2half_rn(u);
      else p[i] = __float2bfloat16_rn(u);
    }
  }
}

template <class T>
std::shared_ptr<wb::DeviceBuffer<host_t<T>>> device_random(size_t n, uint64_t seed) {
  auto buf = std::make_shared<wb::DeviceBuffer<host_t<T>>>(n);
  fill_random_kernel<<<1024, 256>>>(dev<T>(*buf), n, seed);
  WB_CHECK_LAUNCH();
  return buf;
}

template <class In, class Out>
Launch prepare_typed(GemmFn<In, Out>* fn, int m, int n, int k, uint64_t seed) {
  auto a = device_random<In>(size_t(m) * k, seed);
  auto b = device_random<In>(size_t(k) * n, seed ^ 0x5bd1e995u);
  auto d = std::make_shared<wb::DeviceBuffer<host_t<Out>>>(size_t(m) * n);
  d->poison();
  CUDA_CHECK(cudaDeviceSynchronize());
  return [=](cudaStream_t s) { fn(m, n, k, dev<In>(*a), dev<In>(*b), nullptr, dev<Out>(*d), s); };
}

}  // namespace

std::string GemmCase::text(Types t) const {
  return std::string("gemm ") + types_name(t) + " M=" + std::to_string(m) + " N=" + std::to_string(n) +
         " K=" + std::to_string(k) + (with_c ? " +C" : "") + (symmetric ? " (symmetric A and B)" : "");
}

wb::Outcome check_gemm(const Kernels& k, Types t, const GemmCase& g, wb::Rng& rng) {
  if (!has(k, t)) {
    return wb::Outcome::wrong(g.text(t) + ": the kernel set '" + k.name + "' has no version for " + types_name(t));
  }
  switch (t) {
    case Types::F16_F32: return check_typed<__half, float>(k.f16_f32, t, g, rng);
    case Types::F16_F16: return check_typed<__half, __half>(k.f16_f16, t, g, rng);
    case Types::BF16_F32: return check_typed<__nv_bfloat16, float>(k.bf16_f32, t, g, rng);
    case Types::BF16_BF16: return check_typed<__nv_bfloat16, __nv_bfloat16>(k.bf16_bf16, t, g, rng);
    case Types::I8_I32: return check_typed<int8_t, int32_t>(k.i8_i32, t, g, rng);
  }
  return wb::Outcome::wrong("unknown type combination");
}

double gemm_bytes(Types t, double m, double n, double k) {
  double in = 2, out = 4;
  switch (t) {
    case Types::F16_F32:
    case Types::BF16_F32: in = 2, out = 4; break;
    case Types::F16_F16:
    case Types::BF16_BF16: in = 2, out = 2; break;
    case Types::I8_I32: in = 1, out = 4; break;
  }
  return in * (m * k + k * n) + out * m * n;
}

wb::Peak gemm_peak(Types t) {
  switch (t) {
    case Types::F16_F32:
    case Types::F16_F16: return wb::Peak::F16Tensor;
    case Types::BF16_F32:
    case Types::BF16_BF16: return wb::Peak::BF16Tensor;
    case Types::I8_I32: return wb::Peak::I8Tensor;
  }
  return wb::Peak::BF16Tensor;
}

Launch prepare_gemm(const Kernels& k, Types t, int m, int n, int kk, uint64_t seed) {
  switch (t) {
    case Types::F16_F32: return prepare_typed<__half, float>(k.f16_f32, m, n, kk, seed);
    case Types::F16_F16: return prepare_typed<__half, __half>(k.f16_f16, m, n, kk, seed);
    case Types::BF16_F32: return prepare_typed<__nv_bfloat16, float>(k.bf16_f32, m, n, kk, seed);
    case Types::BF16_BF16: return prepare_typed<__nv_bfloat16, __nv_bfloat16>(k.bf16_bf16, m, n, kk, seed);
    case Types::I8_I32: return prepare_typed<int8_t, int32_t>(k.i8_i32, m, n, kk, seed);
  }
  return {};
}

}  // namespace ch05
