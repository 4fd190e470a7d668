// Fixture submission "fast", chapter 6, exercise 2: the solution's step v4 (the row held in
// registers; step v2 for rows too long for them). The solution's file is compiled into this one
// with its namespace renamed (ch06::solution becomes ch06::fast_ex2), so that programs linking the
// solution library as well (the benchmark) see none of its functions twice.
#include "ch06.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex2
#include "v2_block_smem_reduce.cu"
#undef solution

#define solution fast_ex2
#include "v4_row_in_registers.cu"
#undef solution

namespace ch06 {

void student::residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h,
                                 bf16* y, float* mean, float* rstd, int N, int C, int ld, float eps,
                                 cudaStream_t stream) {
  fast_ex2::v4_residual_layernorm(x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps, stream);
}

}  // namespace ch06
