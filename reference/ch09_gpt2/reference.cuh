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

// INT8 weights (dequant_cublaslt.cu). No library has this GEMV, so the reference turns q (N, K)
// and scale (N) into BF16 weights W[n][k] = bf16(q[n][k] * scale[n]) ONCE, in
// dequantize_w8_prepare (the harness calls it untimed, after every change of the inputs, as a
// model would after loading), and runs cublaslt_gemv<bf16> on that copy. It reads BF16
// weights: twice the bytes of the INT8 kernel, so it measures what INT8 buys.
void dequantize_w8_prepare(const int8_t* q, const float* scale, int N, int K, cudaStream_t stream);
// y (N) = epilogue(W · x + b) with W the prepared copy; a call whose (q, scale, N, K) was not
// prepared dequantizes first (correct, but then inside the caller's timing).
void cublaslt_gemv_w8a16(const bf16* x, const int8_t* q, const float* scale, const bf16* b, bf16* y, int N, int K,
                         Epilogue epi, cudaStream_t stream);

}  // namespace ch09::reference
