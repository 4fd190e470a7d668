// Fixture submission "wrong-rectangles", chapter 7, exercise 1: the solution's step v2 (the online
// softmax), called with B and V swapped: every access stays inside the B x V matrix, but the rows
// it normalises are not the rows of x. The solution's file is compiled into this one with its
// namespace renamed (ch07::solution becomes ch07::wrong_rectangles_ex1), so that programs linking
// the solution library as well (the benchmark) see none of its functions twice.
#include "ch07.cuh"
#include "runtime/errors.cuh"
#include "tune/tune.h"

#define solution wrong_rectangles_ex1
#include "v2_online.cu"
#undef solution

namespace ch07 {

void student::softmax_three_pass(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  wrong_rectangles_ex1::softmax_online(x, probs, V, B, stream);  // B and V swapped
}

}  // namespace ch07
