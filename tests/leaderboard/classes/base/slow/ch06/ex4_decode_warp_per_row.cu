// Fixture submission "slow", chapter 6, exercise 4: the solution's step v1 (one thread per row).
// The solution's file is compiled into this one with its namespace renamed (ch06::solution becomes
// ch06::slow_ex4), so that programs linking the solution library as well (the benchmark) see none
// of its functions twice.
#include "ch06.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex4
#include "v1_thread_per_row.cu"
#undef solution

namespace ch06 {

void student::residual_layernorm_warp(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h,
                                      bf16* y, float* mean, float* rstd, int N, int C, int ld, float eps,
                                      cudaStream_t stream) {
  slow_ex4::v1_residual_layernorm(x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps, stream);
}

}  // namespace ch06
