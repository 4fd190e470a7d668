// Fixture submission "slow", chapter 6, exercise 1: the solution's step v2 (a block per row, a
// shared-memory reduction), the first FP32 step. The solution's file is compiled into this one with
// its namespace renamed (ch06::solution becomes ch06::slow_ex1), so that programs linking the
// solution library as well (the benchmark) see none of its functions twice.
#include "ch06.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex1
#include "v2_block_smem_reduce.cu"
#undef solution

namespace ch06 {

void student::layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                            float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  slow_ex1::v2_layernorm_f32(x, gamma, beta, y, mean, rstd, N, C, ld, eps, stream);
}

}  // namespace ch06
