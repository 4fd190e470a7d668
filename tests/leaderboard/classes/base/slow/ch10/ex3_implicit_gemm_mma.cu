// Fixture submission "slow", chapter 10, exercise 3: the solution's step v3 (WMMA, 64 x 64 tiles,
// no cp.async): right, and slower than step v4. The solution's file is compiled into this one with
// its namespace renamed (ch10::solution becomes ch10::slow_ex3), so that programs linking the
// solution library as well (the benchmark) see none of its functions twice.
#include <cstdint>

#include "ch10.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex3
#include "v3_implicit_gemm_wmma.cu"
#undef solution

namespace ch10 {

void student::conv_implicit_mma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                ConvShape s, cudaStream_t stream) {
  slow_ex3::v3_implicit_gemm_wmma(x, w, bn, residual, y, s, stream);
}

}  // namespace ch10
