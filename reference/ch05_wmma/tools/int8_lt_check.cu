// Self-check and timing of chapter 5's cuBLASLt INT8 reference (reference/ch05_wmma/cublaslt_int8.cu).
//
//   1. Exactness: D = A * B (+ C) against a CPU int64 reference on random int8 inputs in
//      [-128, 127] and on extreme ones (all -128; all 127; A all -128 with B all 127), with and
//      without C, for M x N x K = 1x1x1, 17x33x65, 128x256x64, 255x257x263, 1000x1000x3 (all of
//      D) and 4096^3 (sampled elements of D). Also: a call with no prepare before it, a changed B
//      re-prepared under the same pointer, misaligned A/C/D pointers, and K == 0 / M == 0.
//      Every element of D must equal the reference exactly.
//   2. Timing at 4096^3 and 8192^3: cublaslt_i8 next to cublasGemmEx (INT8, COMPUTE_32I, called
//      as chapters/ch05_wmma/cublas_gemm.cuh calls it), CUDA events around 20 calls after a
//      warm-up; the B^T arrangement (cublaslt_i8_prepare) is done before, untimed. Prints TOPS.
//
// Not part of the chapter build (tools/ is not globbed). Build from the repository root:
//
//   nvcc -std=c++20 -O2 -arch=sm_90 -I harness -I chapters/ch05_wmma -I reference/ch05_wmma
//   reference/ch05_wmma/tools/int8_lt_check.cu reference/ch05_wmma/cublaslt_int8.cu harness/runtime/errors.cpp
//   -lcublasLt -lcublas -o int8_lt_check
//
// (one line; -arch=sm_80 for an A100, or -arch=native.) Run ./int8_lt_check; exit status 0 when every
// check passed, 1 when one failed, 2 on a CUDA or cuBLAS error.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cublaslt_int8.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"

namespace {

using ch05::reference::cublaslt_i8;
using ch05::reference::cublaslt_i8_path;
using ch05::reference::cublaslt_i8_prepare;

// splitmix64: fast, and good enough for test data.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int8_t i8() { return static_cast<int8_t>(next() & 0xFF); }  // uniform on [-128, 127]
  int32_t i32_within(int32_t bound) {                         // uniform on [-bound, bound]
    return static_cast<int32_t>(static_cast<int64_t>(next() % (2 * uint64_t(bound) + 1)) - bound);
  }
};

enum class Fill { Random, AllMin, AllMax, MinTimesMax };
// Per fill, in the enum's order: its name, and the one value of all of A and of all of B
// (unused for Random).
struct FillInfo {
  const char* name;
  int8_t a, b;
};
constexpr FillInfo kFills[] = {
    {"random", 0, 0}, {"all -128", -128, -128}, {"all 127", 127, 127}, {"A -128, B 127", -128, 127}};
const char* fill_name(Fill f) { return kFills[static_cast<int>(f)].name; }

void fill_inputs(Fill f, Rng& rng, std::vector<int8_t>& a, std::vector<int8_t>& b) {
  if (f == Fill::Random) {
    for (auto& v : a) v = rng.i8();
    for (auto& v : b) v = rng.i8();
    return;
  }
  std::fill(a.begin(), a.end(), kFills[static_cast<int>(f)].a);
  std::fill(b.begin(), b.end(), kFills[static_cast<int>(f)].b);
}

// C's values stay within 2^30, so that C + A*B fits int32 for K up to 4096 (|A*B| <= 2^26).
// An epilogue computed in float would lose their low bits: this is what catches it.
constexpr int32_t kCBound = 1 << 30;

int failures = 0;

// cudaMemcpy from pageable memory and cudaMemset may return before the device has finished
// them, and the calls under test run on a non-blocking stream, which does not wait for the
// default stream: wait for the device before each call.
void settle() { CUDA_CHECK(cudaDeviceSynchronize()); }

// Byte offsets of A, C and D from a 256-byte boundary: 0 for cudaMalloc'd pointers.
struct Offsets {
  size_t a = 0, c = 0, d = 0;
};

// One case: D = A * B (+ C) on fresh device buffers, every element (or `samples` random
// ones, plus the corners) compared with the int64 reference.
void check(int M, int N, int K, Fill fill, bool with_C, bool prepare, int samples, cudaStream_t stream, uint64_t seed,
           Offsets off = {}, const char* note = "") {
  Rng rng{seed};
  std::vector<int8_t> a(size_t(M) * K), b(size_t(K) * N);
  fill_inputs(fill, rng, a, b);
  std::vector<int32_t> c(with_C ? size_t(M) * N : 0);
  for (auto& v : c) v = rng.i32_within(kCBound);

  wb::DeviceBuffer<int8_t> a_buf(a.size() + off.a + 1), b_buf(b.size() + 1);
  wb::DeviceBuffer<int32_t> c_buf(c.size() + off.c / 4 + 1), d_buf(size_t(M) * N + off.d / 4 + 1);
  int8_t* A = a_buf.data() + off.a;
  int8_t* B = b_buf.data();
  int32_t* C = with_C ? c_buf.data() + off.c / 4 : nullptr;
  int32_t* D = d_buf.data() + off.d / 4;
  if (!a.empty()) CUDA_CHECK(cudaMemcpy(A, a.data(), a.size(), cudaMemcpyHostToDevice));
  if (!b.empty()) CUDA_CHECK(cudaMemcpy(B, b.data(), b.size(), cudaMemcpyHostToDevice));
  if (with_C && !c.empty()) CUDA_CHECK(cudaMemcpy(C, c.data(), c.size() * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_buf.data(), 0xA5, d_buf.bytes()));  // "unwritten" shows as 0xA5A5A5A5
  settle();

  if (prepare) cublaslt_i8_prepare(M, N, K, A, B, stream);
  cublaslt_i8(M, N, K, A, B, C, D, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<int32_t> d(size_t(M) * N);
  if (!d.empty()) CUDA_CHECK(cudaMemcpy(d.data(), D, d.size() * 4, cudaMemcpyDeviceToHost));

  // The elements to check: all of D, or a sample with the four corners.
  std::vector<std::pair<int, int>> at;
  if (samples <= 0) {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) at.emplace_back(i, j);
  } else {
    at = {{0, 0}, {0, N - 1}, {M - 1, 0}, {M - 1, N - 1}};
    for (int s = 0; s < samples; ++s) at.emplace_back(int(rng.next() % M), int(rng.next() % N));
  }
  long long bad = 0;
  for (auto [i, j] : at) {
    int64_t want = with_C ? c[size_t(i) * N + j] : 0;
    for (int p = 0; p < K; ++p) want += int64_t(a[size_t(i) * K + p]) * b[size_t(p) * N + j];
    if (want < INT32_MIN || want > INT32_MAX) {
      std::printf("    test error: reference %lld does not fit int32\n", static_cast<long long>(want));
    }
    const int32_t got = d[size_t(i) * N + j];
    if (got != want) {
      if (bad < 5) {
        std::printf("    D[%d][%d] = %d, expected %lld\n", i, j, got, static_cast<long long>(want));
      }
      ++bad;
    }
  }
  // Nothing outside D's M x N may be written (the padded path copies back only that part).
  if (d_buf.size() > size_t(M) * N + off.d / 4) {
    int32_t after = 0;
    CUDA_CHECK(cudaMemcpy(&after, D + size_t(M) * N, 4, cudaMemcpyDeviceToHost));
    if (after != int32_t(0xA5A5A5A5)) {
      std::printf("    the element after D was overwritten\n");
      ++bad;
    }
  }
  const bool aligned = off.a == 0 && off.c == 0 && off.d == 0;
  std::printf("%s %5d x %5d x %5d  %-13s %-6s %-10s %-9s %s%s\n", bad ? "FAIL" : "ok  ", M, N, K, fill_name(fill),
              with_C ? "+ C" : "", prepare ? "prepared" : "inline", samples > 0 ? "sampled" : "all of D",
              cublaslt_i8_path(M, N, K, with_C, aligned).c_str(), note);
  if (bad) ++failures;
}

// K == 0 (D = C or zeros) and M == 0 / N == 0 (nothing written).
void check_empty(cudaStream_t stream) {
  const int M = 5, N = 7;
  std::vector<int32_t> c(M * N);
  for (int i = 0; i < M * N; ++i) c[i] = 1000 * i - 7;
  wb::DeviceBuffer<int32_t> c_buf(c), d_buf(M * N);
  wb::DeviceBuffer<int8_t> dummy(16);
  bool ok = true;
  for (bool with_C : {false, true}) {
    CUDA_CHECK(cudaMemset(d_buf.data(), 0xA5, d_buf.bytes()));
    settle();
    cublaslt_i8(M, N, 0, dummy.data(), dummy.data(), with_C ? c_buf.data() : nullptr, d_buf.data(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<int32_t> d = d_buf.download();
    for (int i = 0; i < M * N; ++i) ok = ok && d[i] == (with_C ? c[i] : 0);
  }
  CUDA_CHECK(cudaMemset(d_buf.data(), 0xA5, d_buf.bytes()));
  settle();
  cublaslt_i8(0, N, 8, dummy.data(), dummy.data(), nullptr, d_buf.data(), stream);
  cublaslt_i8(M, 0, 8, dummy.data(), dummy.data(), nullptr, d_buf.data(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int32_t v : d_buf.download()) ok = ok && v == int32_t(0xA5A5A5A5);
  std::printf("%s K == 0 gives C or zeros; M == 0, N == 0 write nothing\n", ok ? "ok  " : "FAIL");
  if (!ok) ++failures;
}

// A changed B under the same pointer: re-prepared, the result follows the new B.
void check_reprepare(cudaStream_t stream) {
  const int M = 64, N = 128, K = 96;
  Rng rng{99};
  std::vector<int8_t> a(M * K), b1(K * N), b2(K * N);
  for (auto& v : a) v = rng.i8();
  for (auto& v : b1) v = rng.i8();
  for (auto& v : b2) v = rng.i8();
  wb::DeviceBuffer<int8_t> A(a), B(b1);
  wb::DeviceBuffer<int32_t> D(M * N);
  settle();
  cublaslt_i8_prepare(M, N, K, A.data(), B.data(), stream);
  cublaslt_i8(M, N, K, A.data(), B.data(), nullptr, D.data(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  B.upload(b2);
  settle();
  cublaslt_i8_prepare(M, N, K, A.data(), B.data(), stream);
  cublaslt_i8(M, N, K, A.data(), B.data(), nullptr, D.data(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<int32_t> d = D.download();
  bool ok = true;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int64_t want = 0;
      for (int p = 0; p < K; ++p) want += int64_t(a[i * K + p]) * b2[p * N + j];
      ok = ok && d[i * N + j] == want;
    }
  std::printf("%s a new B under the same pointer, prepared again, is used\n", ok ? "ok  " : "FAIL");
  if (!ok) ++failures;
}

__global__ void fill_i8_kernel(int8_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    p[i] = static_cast<int8_t>((z ^ (z >> 31)) & 0xFF);
  }
}

// Milliseconds per call of `fn`, over `reps` calls after `warmup`.
template <class Fn>
float time_ms(Fn fn, cudaStream_t stream, int warmup = 3, int reps = 20) {
  for (int i = 0; i < warmup; ++i) fn();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  wb::Event start, stop;
  start.record(stream);
  for (int i = 0; i < reps; ++i) fn();
  stop.record(stream);
  CUDA_CHECK(cudaEventSynchronize(stop.get()));
  return stop.ms_since(start) / reps;
}

void bench(int S, cudaStream_t stream, cublasHandle_t cublas) {
  const int M = S, N = S, K = S;
  wb::DeviceBuffer<int8_t> A(size_t(M) * K), B(size_t(K) * N);
  wb::DeviceBuffer<int32_t> D_lt(size_t(M) * N), D_ex(size_t(M) * N);
  fill_i8_kernel<<<1024, 256, 0, stream>>>(A.data(), A.size(), 1);
  fill_i8_kernel<<<1024, 256, 0, stream>>>(B.data(), B.size(), 2);
  WB_CHECK_LAUNCH();

  cublaslt_i8_prepare(M, N, K, A.data(), B.data(), stream);  // untimed: B^T and the plans
  const float lt_ms = time_ms([&] { cublaslt_i8(M, N, K, A.data(), B.data(), nullptr, D_lt.data(), stream); }, stream);

  const int32_t alpha = 1, beta = 0;
  const float ex_ms = time_ms(
      [&] {
        CUBLAS_CHECK(cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B.data(), CUDA_R_8I, N, A.data(),
                                  CUDA_R_8I, K, &beta, D_ex.data(), CUDA_R_32I, N, CUBLAS_COMPUTE_32I,
                                  CUBLAS_GEMM_DEFAULT));
      },
      stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));

  // The two libraries must agree exactly on the timed product.
  const bool same = D_lt.download() == D_ex.download();
  const double ops = 2.0 * M * N * K;
  std::printf("%5d^3  cublasLt %8.3f ms %7.1f TOPS   cublasGemmEx %8.3f ms %7.1f TOPS   (x%.1f)  %s  [%s]\n", S, lt_ms,
              ops / (lt_ms * 1e-3) / 1e12, ex_ms, ops / (ex_ms * 1e-3) / 1e12, ex_ms / lt_ms,
              same ? "results equal" : "RESULTS DIFFER", cublaslt_i8_path(M, N, K, false).c_str());
  if (!same) ++failures;
}

}  // namespace

int main() {
  try {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    std::printf("%s (sm_%d%d), cuBLASLt %zu\n\n", prop.name, prop.major, prop.minor, cublasLtGetVersion());

    wb::Stream stream;
    const Fill fills[] = {Fill::Random, Fill::AllMin, Fill::AllMax, Fill::MinTimesMax};
    struct Shape {
      int M, N, K, samples;
    };
    const Shape shapes[] = {{1, 1, 1, 0},       {17, 33, 65, 0},    {128, 256, 64, 0},
                            {255, 257, 263, 0}, {1000, 1000, 3, 0}, {4096, 4096, 4096, 4096}};
    uint64_t seed = 1;
    for (const Shape& s : shapes) {
      // First call of a shape without prepare: the arrangement happens inline.
      check(s.M, s.N, s.K, Fill::Random, false, false, s.samples, stream, seed++);
      for (Fill f : fills)
        for (bool with_C : {false, true}) check(s.M, s.N, s.K, f, with_C, true, s.samples, stream, seed++);
    }
    // Pointers off the 256-byte boundary cuBLASLt's heuristic assumes: the padded path.
    check(128, 256, 64, Fill::Random, true, true, 0, stream, seed++, Offsets{4, 16, 16}, "  (A +4 B, C and D +16 B)");
    check(17, 33, 65, Fill::Random, true, true, 0, stream, seed++, Offsets{1, 4, 8}, "  (A +1 B, C +4 B, D +8 B)");
    check_empty(stream);
    check_reprepare(stream);

    std::printf("\ntiming: 20 calls after 3 warm-up calls, B^T arranged before (untimed)\n");
    wb::CublasHandle cublas;
    CUBLAS_CHECK(cublasSetStream(cublas, stream));
    for (int S : {4096, 8192}) bench(S, stream, cublas);

    std::printf("\n%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
