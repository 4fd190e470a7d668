// Fixture submission "slow", chapter 2, exercise 4: the solution's step v1 on BF16 (the writes are
// not coalesced). The solution's file is compiled into this one with its namespace renamed
// (ch02::solution becomes ch02::slow_ex4), so that programs linking the solution library as well
// (the benchmark) see none of its functions twice.
#include "ch02.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex4
#include "v1_naive.cu"
#undef solution

namespace ch02 {

void student::transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols,
                             cudaStream_t stream) {
  slow_ex4::v1_transpose_bf16(in, out, rows, cols, stream);
}

}  // namespace ch02
