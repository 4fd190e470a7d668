// Fixture submission "slow", chapter 2, exercise 3: the solution's step v1 (one element per thread;
// the writes are not coalesced). The solution's file is compiled into this one with its namespace
// renamed (ch02::solution becomes ch02::slow_ex3), so that programs linking the solution library as
// well (the benchmark) see none of its functions twice.
#include "ch02.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex3
#include "v1_naive.cu"
#undef solution

namespace ch02 {

void student::transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  slow_ex3::v1_transpose_f32(in, out, rows, cols, stream);
}

}  // namespace ch02
