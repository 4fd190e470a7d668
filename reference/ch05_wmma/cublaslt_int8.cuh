// Chapter 5's INT8 library reference on cuBLASLt: D = A * B (+ C), int8 in, int32 out, the
// row-major operation of ch05.cuh. Unlike cublasGemmEx it reaches cuBLASLt's integer
// tensor-core (IMMA) kernels, which want the second row-major operand (B) stored transposed:
// that copy is made once, outside any timed region, by cublaslt_i8_prepare.
// How and why: reference/ch05_wmma/cublaslt_int8.cu. Link cuBLASLt (CUDA::cublasLt).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace ch05::reference {

// Arranges the static operand for the next cublaslt_i8 calls with these pointers and sizes
// (on `stream`, untimed). Must be called again whenever the contents of A or B change.
void cublaslt_i8_prepare(int M, int N, int K, const int8_t* A, const int8_t* B, cudaStream_t stream);

// D = A * B (+ C), int8 in, int32 out, using the prepared operand. If prepare was not called for
// these pointers/sizes, it prepares first (inline, so correct but slower).
void cublaslt_i8(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                 cudaStream_t stream);

// Which path an M x N x K call takes on the current device (planning it if need be), for
// notes and logs: "cublasLt direct", "cublasLt on copies padded to 17 x 36 x 68", or
// "integer kernel (cuBLASLt took no padding)". `aligned`: A, C and D start on 256 bytes
// (cudaMalloc pointers do); misaligned pointers go through the padded copies.
std::string cublaslt_i8_path(int M, int N, int K, bool with_C, bool aligned = true);

}  // namespace ch05::reference
