// Chapter 4 — tiled FP32 GEMM: the interface between your kernels and the harness.
//
// You write one SGEMM three times, each a step further, one file per step:
//   ex1_naive.cu            one thread per element of C, coalesced
//   ex2_smem_tiling.cu      tiles of A and B staged in shared memory
//   ex3_register_tiling.cu  each thread computes a small block of C from registers
//                           (then go as far as you like: float4 loads, warp tiles,
//                           double buffering; docs/ch04-tiled-gemm.md has the hint ladder)
// Each launcher receives device pointers and a stream, picks a grid with a ceiling
// division, launches its kernel on that stream and checks the launch.
//
// The operation, FP32 throughout, every matrix row-major:
//
//   C = alpha * A * B + beta * C
//
//   A is M x K, element (i, p) at A[i * lda + p], lda >= max(1, K)
//   B is K x N, element (p, j) at B[p * ldb + j], ldb >= max(1, N)
//   C is M x N, element (i, j) at C[i * ldc + j], ldc >= max(1, N)
//
// Rules the tests hold you to (they are the BLAS rules):
//   * any M, N, K >= 0: primes, 1, and sizes that are no multiple of your tile sizes;
//     M == 0 or N == 0: nothing to do (launch nothing: a grid of zero blocks is an error);
//     K == 0: C = beta * C.
//   * beta == 0: C is output only. Do not read it: it may hold NaN (the tests fill it with
//     NaN), and 0 * NaN is NaN. Otherwise C is read, scaled by beta, and written back.
//   * only the M x N elements of C are written, never the padding columns [N, ldc).
//   * the leading dimensions may be larger than the widths, and need not be multiples of 4:
//     a float4 load is only allowed where the address is 16-byte aligned.
// Pointers come from cudaMalloc (256-byte aligned).
#pragma once
#include <cuda_runtime.h>

#include <ostream>
#include <string>
#include <vector>

namespace ch04 {

using SgemmFn = void(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                     float* C, int ldc, cudaStream_t stream);

// One SGEMM: an exercise of the learner's, one step of the solution ladder, or the library
// reference. A null entry means "this set has no SGEMM".
struct Kernels {
  std::string name;
  SgemmFn* sgemm = nullptr;
};

// Test names and messages show a kernel by its name.
inline void PrintTo(const Kernels& k, std::ostream* os) { *os << k.name; }

std::vector<Kernels> student_variants();    // chapters/ch04_tiled_gemm/variants.cu
std::vector<Kernels> solution_variants();   // solutions/ch04_tiled_gemm/variants.cu
std::vector<Kernels> reference_variants();  // reference/ch04_tiled_gemm/cublas_sgemm.cu

// Every tile configuration of the best solution that the autotuner may pick, so that the
// solution tests check each one, not only the one this GPU happens to use.
std::vector<Kernels> tuned_config_variants();  // solutions/ch04_tiled_gemm/v8_configs.cu
// Which configuration the best solution runs on the current GPU, and where it came from
// (configs/ch04_sgemm.json, or the built-in default and why).
std::string best_config_note();  // solutions/ch04_tiled_gemm/v8_double_buffering.cu

// The reference's cuBLAS math mode, in words, for the benchmark's title.
extern const char* const kReferenceMathMode;  // reference/ch04_tiled_gemm/cublas_sgemm.cu

namespace student {
SgemmFn sgemm_naive;      // ex1_naive.cu
SgemmFn sgemm_smem;       // ex2_smem_tiling.cu
SgemmFn sgemm_registers;  // ex3_register_tiling.cu
}  // namespace student

}  // namespace ch04
