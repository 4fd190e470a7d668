// Fixture submission "slow", chapter 8, exercise 1: the solution's step v1 (scores, mask, softmax
// and P V as four kernels through the scratch buffer). The solution's file is compiled into this
// one with its namespace renamed (ch08::solution becomes ch08::slow_ex1), so that programs linking
// the solution library as well (the benchmark) see none of its functions twice.
#include <cmath>

#include "ch08.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex1
#include "v1_unfused.cu"
#undef solution

namespace ch08 {

void student::unfused_attention(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H,
                                int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  slow_ex1::v1_attention_f32(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, scratch, stream);
}

}  // namespace ch08
