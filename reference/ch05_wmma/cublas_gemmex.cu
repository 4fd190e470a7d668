// Chapter 5 reference ("variant 0"): cuBLAS cublasGemmEx with the same input types as the
// learner's kernels, FP32 compute (CUBLAS_COMPUTE_32F) for FP16/BF16 inputs and INT32
// compute (CUBLAS_COMPUTE_32I) for INT8, the default (tensor-op) algorithm selection.
// The call itself, the row-major to column-major mapping and the INT8 shape limits (with
// the zero-padded path for K or N not multiples of 4) are in chapters/ch05_wmma/cublas_gemm.cuh,
// which the checks use too (as the yardstick for rounding error).
//
// INT8 has two references: first cuBLASLt's integer tensor-core (IMMA) kernels with B
// arranged once, untimed, before the calls (reference/ch05_wmma/cublaslt_int8.cuh) — the
// benchmark's "x ref" column compares with it — then cublasGemmEx as above.
#include "ch05.cuh"
#include "cublas_gemm.cuh"
#include "cublaslt_int8.cuh"
#include "declare/op.cuh"

namespace ch05 {

WB_VARIANTS(ch05_reference, wb::Role::Reference) {
  return {
      wb::variant("gemm/f16_f32", "cublas_gemmex", &cublas::gemm<__half, float>).is_library(),
      wb::variant("gemm/f16_f16", "cublas_gemmex", &cublas::gemm<__half, __half>).is_library(),
      wb::variant("gemm/bf16_f32", "cublas_gemmex", &cublas::gemm<__nv_bfloat16, float>)
          .is_library()
          .needs_cc(types_min_cc(Types::BF16_F32)),
      wb::variant("gemm/bf16_bf16", "cublas_gemmex", &cublas::gemm<__nv_bfloat16, __nv_bfloat16>)
          .is_library()
          .needs_cc(types_min_cc(Types::BF16_BF16)),
      wb::variant("gemm/i8_i32", "cublaslt_imma", &reference::cublaslt_i8)
          .is_library()
          .needs_cc(types_min_cc(Types::I8_I32))
          .with_prepare([](const wb::Args& a, cudaStream_t s) {
            reference::cublaslt_i8_prepare(a.i("M"), a.i("N"), a.i("K"), a.in<int8_t>("A"), a.in<int8_t>("B"), s);
          })
          .with_note("B arranged once per set of inputs, outside the timed region (like pre-arranged weights)"),
      wb::variant("gemm/i8_i32", "cublas_gemmex", &cublas::gemm<int8_t, int32_t>)
          .is_library()
          .needs_cc(types_min_cc(Types::I8_I32))
          .with_note("INT8 with K or N not a multiple of 4 runs on zero-padded copies"),
  };
}

}  // namespace ch05
