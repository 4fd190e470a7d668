// How chapter 4's SGEMM is checked and timed. Used by the tests, the benchmark, the
// autotuner and the harness self-tests, so a broken kernel meets exactly the checks a
// learner's does.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "ch04.cuh"
#include "cuda/bench.cuh"
#include "cuda/launch.cuh"
#include "host/rng.h"

namespace ch04 {

// One SGEMM problem. The leading dimensions are the widths plus padding columns:
//   lda = max(1, k) + pad,  ldb = n + 2 * pad,  ldc = n + 3 * pad
// so that every stride differs from every width when pad > 0. pad = 4 keeps rows 16-byte
// aligned when the widths are multiples of 4 (the vector path); an odd pad breaks the
// alignment of every other row (the scalar path).
struct GemmArgs {
  int m = 0, n = 0, k = 0;
  int pad = 0;
  float alpha = 1.0f;
  float beta = 0.0f;  // 0: C holds NaN poison and must not be read; else C starts random

  int lda() const { return (k > 0 ? k : 1) + pad; }
  int ldb() const { return (n > 0 ? n : 1) + 2 * pad; }
  int ldc() const { return (n > 0 ? n : 1) + 3 * pad; }
  std::string text() const;  // "sgemm M=129 N=131 K=137 lda=141 ldb=139 ldc=143 alpha=1.5 beta=-0.75"
};

// Draws A, B (and C when beta != 0) from `rng`, poisons C's padding (and all of C when
// beta == 0), runs the launcher once and compares C with a float64 reference: every
// element for small problems, a sample (plus the first and last rows) for large ones;
// every element is still scanned for poison and NaN. C's padding must come back untouched.
wb::Outcome check_sgemm(SgemmFn* fn, const GemmArgs& args, wb::Rng& rng);

// The three argument sets the tests run on every shape: packed with beta = 0; padded
// (pad 4) with beta != 0; padded with an odd pad (misaligned rows) and beta != 0.
std::vector<GemmArgs> standard_args(int m, int n, int k);

// The benchmark's operation: C = 1 * A * B + 0.5 * C (C is read and written), packed.
inline constexpr float kBenchAlpha = 1.0f, kBenchBeta = 0.5f;
// Minimum traffic of one call: A and B read once, C read once and written once.
inline double sgemm_bytes(double m, double n, double k) { return 4.0 * (m * k + k * n + 2.0 * m * n); }
inline double sgemm_flops(double m, double n, double k) { return 2.0 * m * n * k; }

// For the benchmark: allocate random inputs once and return the launch to time.
using Launch = std::function<void(cudaStream_t)>;
Launch prepare_sgemm(SgemmFn* fn, int m, int n, int k, uint64_t seed);

// The same problem prepared for fair timing (see wb::bench::Timed): before every timed
// launch, next_inputs draws new A, B and starting C on the GPU (from the seed mixed with
// fresh entropy); check_last compares the last timed output, on a sample, with float64.
wb::bench::Timed prepare_timed_sgemm(SgemmFn* fn, int m, int n, int k, uint64_t seed);

}  // namespace ch04
