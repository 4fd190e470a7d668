// Fixture submission "slow", chapter 7, exercise 1: the solution's step v1 (three passes over each
// row: max, sum, write). The solution's file is compiled into this one with its namespace renamed
// (ch07::solution becomes ch07::slow_ex1), so that programs linking the solution library as well
// (the benchmark) see none of its functions twice.
#include "ch07.cuh"
#include "runtime/errors.cuh"
#include "tune/tune.h"

#define solution slow_ex1
#include "v1_three_pass.cu"
#undef solution

namespace ch07 {

void student::softmax_three_pass(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  slow_ex1::softmax_three_pass(x, probs, B, V, stream);
}

}  // namespace ch07
