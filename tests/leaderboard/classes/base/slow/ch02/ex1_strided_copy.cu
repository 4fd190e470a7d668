// Fixture submission "slow", chapter 2, exercise 1: the solution's step v1 (one element per
// thread). The solution's file is compiled into this one with its namespace renamed (ch02::solution
// becomes ch02::slow_ex1), so that programs linking the solution library as well (the benchmark)
// see none of its functions twice.
#include "ch02.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex1
#include "v1_naive.cu"
#undef solution

namespace ch02 {

void student::strided_copy(const float* in, float* out, int n, int stride, cudaStream_t stream) {
  slow_ex1::v1_strided_copy(in, out, n, stride, stream);
}

}  // namespace ch02
