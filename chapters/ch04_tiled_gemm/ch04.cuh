// Chapter 4 — tiled FP32 GEMM: the interface between your kernels and the harness.
//
// You write one SGEMM three times, each a step further, one file per step:
//   ex1_naive.cu            one thread per element of C, coalesced
//   ex2_smem_tiling.cu      tiles of A and B staged in shared memory
//   ex3_register_tiling.cu  each thread computes a small block of C from registers
//                           (then go as far as you like: float4 loads, warp tiles,
//                           double buffering; docs/ch04-tiled-gemm.md has the hint ladder)
// Each launcher receives device pointers and a stream, picks a grid with a ceiling
// division, launches its kernel on that stream and checks the launch. Nothing else in the
// chapter needs to change: spec.cu declares how the op is checked and timed, variants.cu
// lists your launchers.
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

#include <string>

namespace ch04 {

using SgemmFn = void(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                     float* C, int ldc, cudaStream_t stream);

// Which configuration the best solution runs on the current GPU, and where it came from
// (configs/ch04_sgemm.json, or the built-in default and why).
std::string best_config_note();  // solutions/ch04_tiled_gemm/v8_double_buffering.cu

// The reference's cuBLAS math mode, in words (the autotuner's report, the reference's note).
extern const char* const kReferenceMathMode;  // reference/ch04_tiled_gemm/cublas_sgemm.cu

namespace student {
SgemmFn sgemm_naive;
SgemmFn sgemm_smem;
SgemmFn sgemm_registers;
}  // namespace student

}  // namespace ch04
