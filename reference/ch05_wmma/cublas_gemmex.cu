// Chapter 5 reference ("variant 0"): cuBLAS cublasGemmEx with the same input types as the
// learner's kernels, FP32 compute (CUBLAS_COMPUTE_32F) for FP16/BF16 inputs and INT32
// compute (CUBLAS_COMPUTE_32I) for INT8, the default (tensor-op) algorithm selection.
// The call itself, the row-major to column-major mapping and the INT8 shape limits (with
// the zero-padded path for K or N not multiples of 4) are in chapters/ch05_wmma/cublas_gemm.cuh,
// which the checks use too.
#include "ch05.cuh"
#include "cublas_gemm.cuh"

namespace ch05 {

std::vector<Kernels> reference_variants() {
  return {{"cublas_gemmex", &cublas::gemm<__half, float>, &cublas::gemm<__half, __half>,
           &cublas::gemm<__nv_bfloat16, float>, &cublas::gemm<__nv_bfloat16, __nv_bfloat16>,
           &cublas::gemm<int8_t, int32_t>, 70, false,
           "INT8 with K or N not a multiple of 4 runs on zero-padded copies"}};
}

}  // namespace ch05
