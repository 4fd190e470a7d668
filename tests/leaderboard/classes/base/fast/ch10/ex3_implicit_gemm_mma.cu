// Fixture submission "fast", chapter 10, exercise 3: the solution's step v4 (mma.sync m16n8k16,
// cp.async double buffering, the epilogue on the registers). The solution's file is compiled into
// this one with its namespace renamed (ch10::solution becomes ch10::fast_ex3), so that programs
// linking the solution library as well (the benchmark) see none of its functions twice.
#include <cstdint>

#include "ch10.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex3
#include "v4_implicit_gemm_mma.cu"
#undef solution

namespace ch10 {

void student::conv_implicit_mma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                ConvShape s, cudaStream_t stream) {
  fast_ex3::v4_implicit_gemm_mma(x, w, bn, residual, y, s, stream);
}

}  // namespace ch10
