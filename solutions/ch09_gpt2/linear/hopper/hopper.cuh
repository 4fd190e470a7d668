// The Hopper step of the prefill GEMM (linear/hopper/v12_wgmma_epilogue.cu), built for sm_90a
// alone in its own library (chapters/ch09_gpt2/extra.cmake). The ladder's launcher,
// linear/v12_wgmma_epilogue.cu, decides per call whether this path applies and falls back to
// v8 (linear_mma) where it does not.
#pragma once
#include <cuda_runtime.h>

#include "ch09.cuh"

namespace ch09::solution::hopper {

// Whether the TMA path can take the problem: the rows of x and W (K elements) must be
// multiples of 16 bytes (K % 8 == 0) and both bases 16-byte aligned. Any M and N.
bool wgmma_supports(int M, int N, int K, const bf16* x, const bf16* w);

// y (M, N) = epilogue(x (M, K) · W (N, K)ᵀ + b): only on compute capability 9.0 and when
// wgmma_supports() is true.
void linear_wgmma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                  cudaStream_t stream);

// The same for v13_wgmma_bias_ahead (linear/hopper/v13_wgmma_bias_ahead.cu).
void linear_wgmma_bias_ahead(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                             cudaStream_t stream);

}  // namespace ch09::solution::hopper
