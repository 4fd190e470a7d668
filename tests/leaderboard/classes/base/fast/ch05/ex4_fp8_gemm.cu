// Fixture submission "fast", chapter 5, exercise 4: the solution's step f1 (the quantizer and
// both FP8 GEMMs on CUDA cores). The solution's file is compiled into this one with its
// namespace renamed (ch05::solution becomes ch05::fast_ex4), so that programs linking the
// solution library as well (the benchmark) see none of its functions twice.
#include "ch05.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex4
#include "f1_fp8_cuda_cores.cu"
#undef solution

namespace ch05 {

void student::fp8_quantize(int M, int K, const __nv_bfloat16* X, const float* scale, __nv_fp8_e4m3* Q,
                           cudaStream_t stream) {
  fast_ex4::f1_fp8_quantize(M, K, X, scale, Q, stream);
}

void student::fp8_gemm(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                       const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  fast_ex4::f1_fp8_gemm(M, N, K, A, B, scale_a, scale_b, D, stream);
}

void student::fp8_gemm_block_scaled(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B,
                                    const float* scale_a, const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  fast_ex4::f1_fp8_gemm_block(M, N, K, A, B, scale_a, scale_b, D, stream);
}

}  // namespace ch05
