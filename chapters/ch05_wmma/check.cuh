// How chapter 5's GEMMs are checked and timed. Used by the tests, the benchmark and the
// harness self-tests, so a broken kernel meets exactly the checks a learner's does.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "ch05.cuh"
#include "cuda/launch.cuh"
#include "host/rng.h"
#include "host/roofline.h"

namespace ch05 {

// One GEMM problem: D (m x n) = A (m x k) * B (k x n) (+ C).
struct GemmCase {
  int m = 0, n = 0, k = 0;
  bool with_c = false;     // add a random C
  bool symmetric = false;  // A and B symmetric (needs m == n == k); only the self-tests use it
  std::string text(Types t) const;  // "gemm bf16_bf16 M=17 N=33 K=65 +C"
};

// Draws A and B (and C) from `rng` (random, not symmetric unless asked), poisons D, runs
// the launcher twice and checks:
//   * both runs wrote the same bits (a difference is a race);
//   * every element (a sample for large problems, plus the first and last rows) is within
//     wb::tolerance_for(output type, K) of a float64 reference on the same rounded inputs;
//     INT8 must match exactly;
//   * for float outputs, the kernel's largest error on the compared elements is at most
//     4 x cuBLAS's largest error on the same inputs, plus one rounding step of the output
//     type at the largest |value|, plus the absolute term of the FP32 tolerance for K
//     (cuBLAS splits K on skinny problems, which no single FP32 accumulator can match);
//     applied when at least 256 elements were compared. This is what catches FP16/BF16
//     accumulation where the loose FP16/BF16 output tolerance would let it through.
// On failure the message names the shape, the wrong coordinates, expected vs got, a tile
// map, and a diagnosis where one fits (the K remainder left out, A or B read as
// column-major, a race). With WORKBOOK_VERBOSE=1 in the environment every float check
// prints its largest error next to cuBLAS's and the allowance, on stderr.
wb::Outcome check_gemm(const Kernels& k, Types t, const GemmCase& g, wb::Rng& rng);

// Benchmark accounting: A and B read once, D written once (no C).
double gemm_bytes(Types t, double m, double n, double k);
inline double gemm_flops(double m, double n, double k) { return 2.0 * m * n * k; }
wb::Peak gemm_peak(Types t);

// For the benchmark: random inputs made on the device from `seed`, allocated once, and the
// launch to time (D = A * B, no C).
using Launch = std::function<void(cudaStream_t)>;
Launch prepare_gemm(const Kernels& k, Types t, int m, int n, int kk, uint64_t seed);

}  // namespace ch05
