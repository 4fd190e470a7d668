// Fixture submission "slow", chapter 10, exercise 1: the solution's step v1 (one thread per output,
// every input read from global memory). The solution's file is compiled into this one with its
// namespace renamed (ch10::solution becomes ch10::slow_ex1), so that programs linking the solution
// library as well (the benchmark) see none of its functions twice.
#include <cstdint>

#include "ch10.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex1
#include "v1_direct.cu"
#undef solution

namespace ch10 {

void student::conv2d_direct(const float* x, const float* w, float* y, ConvShape s, cudaStream_t stream) {
  slow_ex1::v1_direct(x, w, y, s, stream);
}

}  // namespace ch10
