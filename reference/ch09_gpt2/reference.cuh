// Chapter 9's reference ("variant 0"): cuBLASLt matmuls with the bias and GELU epilogues
// fused by the library (CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS), FP32 compute.
#pragma once
#include "ch09.cuh"

namespace ch09::reference {

// y (M, N) = epilogue(x (M, K) · W (N, K)ᵀ + b) by cublasLtMatmul. The plan (descriptors and
// the heuristic's algorithm) is made on the first call of each shape and kept; the 32 MiB
// workspace is allocated once. Both happen on the first call, so a CUDA Graph captured
// after one eager call replays without allocating. Throws wb::NoEngine when cuBLASLt has no
// algorithm for the shape.
template <class T>
void cublaslt_linear(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream);
// The same matmul with M = 1.
template <class T>
void cublaslt_gemv(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream);

}  // namespace ch09::reference
