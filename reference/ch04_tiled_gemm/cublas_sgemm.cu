// Chapter 4 reference ("variant 0"): cuBLAS SGEMM in plain FP32, TF32 off.
//
// Math mode: CUBLAS_DEFAULT_MATH, set on the handle before every call. For cublasSgemm it
// means FP32 inputs, FP32 multiply-adds and FP32 accumulation, the same arithmetic as the
// chapter's kernels. (CUBLAS_TF32_TENSOR_OP_MATH would let cuBLAS round the inputs to TF32
// and use the tensor cores: several times faster, and not the same operation.)
//
// Row-major through a column-major library: a row-major M x N matrix with row stride ld
// is, to cuBLAS, a column-major N x M matrix with leading dimension ld, i.e. its transpose.
// So C = A * B (row-major) is C^T = B^T * A^T (column-major): call SGEMM with the operands
// swapped, m = N, n = M, and no transposes.
#include "ch04.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch04 {

const char* const kReferenceMathMode = "cuBLAS SGEMM, CUBLAS_DEFAULT_MATH (FP32 FMA, TF32 off)";

namespace {

void cublas_sgemm(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                  float* C, int ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  cublasHandle_t handle = wb::cublas_for(stream);
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc));
}

}  // namespace

WB_VARIANTS(ch04_reference, wb::Role::Reference) {
  return {wb::variant("sgemm/f32", "cublas_sgemm_fp32", &cublas_sgemm).is_library().with_note(kReferenceMathMode)};
}

}  // namespace ch04
