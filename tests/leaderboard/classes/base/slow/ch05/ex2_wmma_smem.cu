// Fixture submission "slow", chapter 5, exercise 2: the solution's step v1 (WMMA fragments loaded
// straight from global memory) for the four float types. The solution's file is compiled into this
// one with its namespace renamed (ch05::solution becomes ch05::slow_ex2), so that programs linking
// the solution library as well (the benchmark) see none of its functions twice.
#include "ch05.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex2
#include "v1_wmma_global.cu"
#undef solution

namespace ch05 {

void student::wmma_smem_f16_f32(int M, int N, int K, const __half* A, const __half* B,
                                const float* C, float* D, cudaStream_t stream) {
  slow_ex2::v1_wmma_global<__half, float>(M, N, K, A, B, C, D, stream);
}

void student::wmma_smem_f16_f16(int M, int N, int K, const __half* A, const __half* B,
                                const __half* C, __half* D, cudaStream_t stream) {
  slow_ex2::v1_wmma_global<__half, __half>(M, N, K, A, B, C, D, stream);
}

void student::wmma_smem_bf16_f32(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B,
                                 const float* C, float* D, cudaStream_t stream) {
  slow_ex2::v1_wmma_global<__nv_bfloat16, float>(M, N, K, A, B, C, D, stream);
}

void student::wmma_smem_bf16_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B,
                                  const __nv_bfloat16* C, __nv_bfloat16* D, cudaStream_t stream) {
  slow_ex2::v1_wmma_global<__nv_bfloat16, __nv_bfloat16>(M, N, K, A, B, C, D, stream);
}

}  // namespace ch05
