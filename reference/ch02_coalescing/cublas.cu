// Chapter 2 reference ("variant 0"): the library versions, timed next to the learner's.
//
//   strided copy     cublasScopy(n, x = in, incx = stride, y = out, incy = 1)
//   FP32 transpose   cublasSgeam: C = alpha * op(A) + beta * op(B) with op(A) = A^T,
//                    alpha = 1, beta = 0 (B is then not read, and may be null)
//   BF16 transpose   cuBLAS has no BF16 geam; cublasLtMatrixTransform computes the same
//                    C = alpha * op(A) + beta * op(B) for any layout type, BF16 included,
//                    with FP32 scalars (1 and 0: every BF16 value comes through exactly)
//
// cuBLAS is column-major. A row-major rows x cols matrix with row stride cols is, to
// cuBLAS, a column-major cols x rows matrix with leading dimension cols; so `in` is A
// (cols x rows, lda = cols) and `out` is C = A^T (rows x cols, ldc = rows).
#include <cublasLt.h>

#include "ch02.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch02 {
namespace {

void strided_copy(const float* in, float* out, int n, int stride, cudaStream_t stream) {
  if (n == 0) return;
  // The 64-bit form: the last element read, in[(n - 1) * stride], may lie past 2^31.
  CUBLAS_CHECK(cublasScopy_64(wb::cublas_for(stream), n, in, stride, out, 1));
}

void transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasSgeam(wb::cublas_for(stream), CUBLAS_OP_T, CUBLAS_OP_N, rows, cols, &one, in, cols, &zero, nullptr,
                           rows, out, rows));
}

// One cuBLASLt handle per thread, and the descriptors of the last shape, so that a timed
// call does no host-side set-up work.
class LtTranspose {
 public:
  LtTranspose() { CUBLAS_CHECK(cublasLtCreate(&handle_)); }
  ~LtTranspose() {
    release();
    if (handle_) cublasLtDestroy(handle_);
  }
  LtTranspose(const LtTranspose&) = delete;
  LtTranspose& operator=(const LtTranspose&) = delete;

  void run(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream) {
    if (rows != rows_ || cols != cols_) describe(rows, cols);
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasLtMatrixTransform(handle_, transform_, &one, in, a_, &zero, nullptr, nullptr, out, c_, stream));
  }

 private:
  void describe(int rows, int cols) {
    release();
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, CUDA_R_16BF, cols, rows, cols));  // `in`, column-major view
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, rows, cols, rows));  // `out` = A^T
    CUBLAS_CHECK(cublasLtMatrixTransformDescCreate(&transform_, CUDA_R_32F));
    const cublasOperation_t trans = CUBLAS_OP_T;
    CUBLAS_CHECK(cublasLtMatrixTransformDescSetAttribute(transform_, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, &trans,
                                                         sizeof(trans)));
    rows_ = rows;
    cols_ = cols;
  }
  void release() {
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (c_) cublasLtMatrixLayoutDestroy(c_);
    if (transform_) cublasLtMatrixTransformDescDestroy(transform_);
    a_ = c_ = nullptr;
    transform_ = nullptr;
    rows_ = cols_ = -1;
  }

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, c_ = nullptr;
  cublasLtMatrixTransformDesc_t transform_ = nullptr;
  int rows_ = -1, cols_ = -1;
};

void transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  thread_local LtTranspose lt;
  lt.run(in, out, rows, cols, stream);
}

}  // namespace

WB_VARIANTS(ch02_reference, wb::Role::Reference) {
  return {
      wb::variant("strided_copy/f32", "cublas", &strided_copy).is_library(),
      wb::variant("transpose/f32", "cublas", &transpose_f32).is_library(),
      wb::variant("transpose/bf16", "cublas", &transpose_bf16).is_library(),
  };
}

}  // namespace ch02
