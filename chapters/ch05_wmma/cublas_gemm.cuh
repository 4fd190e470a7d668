// cuBLAS GemmEx for chapter 5's row-major D = A * B (+ C). Used twice: as the library
// reference (reference/ch05_wmma/cublas_gemmex.cu) and, inside the checks, as the yardstick
// for rounding error: a kernel's error may be at most a small multiple of cuBLAS's own
// error on the same inputs.
//
// cuBLAS is column-major. A row-major M x N matrix is, to cuBLAS, a column-major N x M
// matrix with the same leading dimension, so row-major D = A * B is column-major
// D^T = B^T * A^T: cublasGemmEx(N, N, m = N, n = M, k = K, B (ld N), A (ld K), D (ld N)).
// Compute types: CUBLAS_COMPUTE_32F for FP16/BF16 inputs (FP32 accumulation, the output
// rounded once), CUBLAS_COMPUTE_32I for INT8 (INT32 accumulation).
//
// INT8 limits: cuBLAS's INT8 path needs the leading dimensions (here N and K) to be
// multiples of 4, and even then turns some shapes down (CUBLAS_STATUS_NOT_SUPPORTED, seen
// on an H100 with cuBLAS 13 for e.g. 136 x 264 x 72). For those this copies A and B into
// zero-padded buffers with M, N and K rounded up to multiples of 4, 16 or 64 (zeros add
// nothing to the sums), multiplies those, and copies the M x N part of the result back.
// Slower, but right on every shape; the benchmark's INT8 shape (4096^3) takes the direct path.
#pragma once
#include <cublas_v2.h>

#include <type_traits>

#include "ch05.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "device/math.cuh"

namespace ch05::cublas {

// The cudaDataType_t of an element type.
template <class T>
struct DataType {
  static constexpr cudaDataType_t value = [] {
    if constexpr (std::is_same_v<T, __half>)
      return CUDA_R_16F;
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      return CUDA_R_16BF;
    else if constexpr (std::is_same_v<T, float>)
      return CUDA_R_32F;
    else if constexpr (std::is_same_v<T, int8_t>)
      return CUDA_R_8I;
    else {
      static_assert(std::is_same_v<T, int32_t>, "no cudaDataType_t for this element type");
      return CUDA_R_32I;
    }
  }();
};

// INT8 GemmEx on M x N x K, with A (ld K), B (ld N), D (ld N); returns cuBLAS's status.
inline cublasStatus_t gemm_i8_direct(int M, int N, int K, const int8_t* A, int lda, const int8_t* B, int ldb,
                                     int32_t beta, int32_t* D, int ldd, cudaStream_t stream) {
  const int32_t alpha = 1;
  return cublasGemmEx(wb::cublas_for(stream), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_8I, ldb, A,
                      CUDA_R_8I, lda, &beta, D, CUDA_R_32I, ldd, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
}

// The same product on zero-padded copies whose M, N and K are rounded up to multiples of
// `pad`; the M x N part of the result is copied back into D.
inline cublasStatus_t gemm_i8_padded(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C,
                                     int32_t* D, int pad, cudaStream_t stream) {
  const int Mp = wb::round_up(M, pad), Np = wb::round_up(N, pad), Kp = wb::round_up(K, pad);
  int8_t *a = nullptr, *b = nullptr;
  int32_t* d = nullptr;
  CUDA_CHECK(cudaMallocAsync(&a, size_t(Mp) * Kp, stream));
  CUDA_CHECK(cudaMallocAsync(&b, size_t(Kp) * Np, stream));
  CUDA_CHECK(cudaMallocAsync(&d, sizeof(int32_t) * Mp * Np, stream));
  CUDA_CHECK(cudaMemsetAsync(a, 0, size_t(Mp) * Kp, stream));
  CUDA_CHECK(cudaMemsetAsync(b, 0, size_t(Kp) * Np, stream));
  CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof(int32_t) * Mp * Np, stream));
  CUDA_CHECK(cudaMemcpy2DAsync(a, Kp, A, K, K, M, cudaMemcpyDeviceToDevice, stream));
  CUDA_CHECK(cudaMemcpy2DAsync(b, Np, B, N, N, K, cudaMemcpyDeviceToDevice, stream));
  if (C != nullptr) {
    CUDA_CHECK(cudaMemcpy2DAsync(d, sizeof(int32_t) * Np, C, sizeof(int32_t) * N, sizeof(int32_t) * N, M,
                                 cudaMemcpyDeviceToDevice, stream));
  }
  const cublasStatus_t status = gemm_i8_direct(Mp, Np, Kp, a, Kp, b, Np, C != nullptr ? 1 : 0, d, Np, stream);
  if (status == CUBLAS_STATUS_SUCCESS) {
    CUDA_CHECK(cudaMemcpy2DAsync(D, sizeof(int32_t) * N, d, sizeof(int32_t) * Np, sizeof(int32_t) * N, M,
                                 cudaMemcpyDeviceToDevice, stream));
  }
  CUDA_CHECK(cudaFreeAsync(a, stream));
  CUDA_CHECK(cudaFreeAsync(b, stream));
  CUDA_CHECK(cudaFreeAsync(d, stream));
  return status;
}

// INT8: the direct call when N and K are multiples of 4 and cuBLAS takes the shape; else
// zero-padded copies, rounded up to multiples of 4, then 16, then 64, until cuBLAS accepts
// one (some shapes with multiples of 4 still come back CUBLAS_STATUS_NOT_SUPPORTED).
inline void gemm_i8(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                    cudaStream_t stream) {
  cublasStatus_t status = CUBLAS_STATUS_NOT_SUPPORTED;
  if (N % 4 == 0 && K % 4 == 0) {
    if (C != nullptr) {
      CUDA_CHECK(cudaMemcpyAsync(D, C, sizeof(int32_t) * M * N, cudaMemcpyDeviceToDevice, stream));
    }
    status = gemm_i8_direct(M, N, K, A, K, B, N, C != nullptr ? 1 : 0, D, N, stream);
  }
  for (int pad : {4, 16, 64}) {
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) break;
    status = gemm_i8_padded(M, N, K, A, B, C, D, pad, stream);
  }
  CUBLAS_CHECK(status);
}

template <class In, class Out>
void gemm(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  if constexpr (std::is_same_v<In, int8_t>) {
    gemm_i8(M, N, K, A, B, C, D, stream);
  } else {
    if (C != nullptr) {
      CUDA_CHECK(cudaMemcpyAsync(D, C, sizeof(Out) * size_t(M) * N, cudaMemcpyDeviceToDevice, stream));
    }
    const float alpha = 1.0f, beta = C != nullptr ? 1.0f : 0.0f;
    CUBLAS_CHECK(cublasGemmEx(wb::cublas_for(stream), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, DataType<In>::value,
                              N, A, DataType<In>::value, K, &beta, D, DataType<Out>::value, N, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace ch05::cublas
