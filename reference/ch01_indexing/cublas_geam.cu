// Chapter 1 reference ("variant 0"): cuBLAS geam, C = alpha * op(A) + beta * op(B).
//
// cuBLAS is column-major; a row-major rows x cols matrix with row stride ld is, to cuBLAS,
// a column-major cols x rows matrix with leading dimension ld, so no transpose is needed.
// A vector of n floats is viewed as a (n / 1024) x 1024 matrix plus a 1 x (n % 1024) tail:
// geam is slow on a single long row. RGB to grey is two geams: grey = 0.299 R + 0.587 G,
// then grey = grey + 0.114 B (in place, which geam allows when C is A with the same ld).
#include "ch01.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch01 {
namespace {

void geam(cudaStream_t stream, int rows, int cols, float alpha, const float* a, int lda, float beta, const float* b,
          int ldb, float* c, int ldc) {
  if (rows == 0 || cols == 0) return;
  CUBLAS_CHECK(
      cublasSgeam(wb::cublas_for(stream), CUBLAS_OP_N, CUBLAS_OP_N, cols, rows, &alpha, a, lda, &beta, b, ldb, c, ldc));
}

void vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  constexpr int kCols = 1024;
  const int rows = n / kCols, tail = n % kCols, done = rows * kCols;
  geam(stream, rows, kCols, 1.0f, a, kCols, 1.0f, b, kCols, c, kCols);
  geam(stream, 1, tail, 1.0f, a + done, tail, 1.0f, b + done, tail, c + done, tail);
}

void rgb_to_grey(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t stream) {
  const size_t plane = static_cast<size_t>(height) * pitch;
  geam(stream, height, width, kRedWeight, rgb, pitch, kGreenWeight, rgb + plane, pitch, grey, pitch);
  geam(stream, height, width, 1.0f, grey, pitch, kBlueWeight, rgb + 2 * plane, pitch, grey, pitch);
}

void matrix_add(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols,
                cudaStream_t stream) {
  geam(stream, rows, cols, 1.0f, a, lda, 1.0f, b, ldb, c, ldc);
}

}  // namespace

WB_VARIANTS(ch01_reference, wb::Role::Reference) {
  wb::VariantList v = {
      wb::variant("vector_add/f32", "cublas_geam", &vector_add),
      wb::variant("rgb_to_grey/f32", "cublas_geam", &rgb_to_grey),
      wb::variant("matrix_add/f32", "cublas_geam", &matrix_add),
  };
  for (wb::Variant& library_call : v) library_call.is_library();  // all three are cuBLAS calls
  return v;
}

}  // namespace ch01
