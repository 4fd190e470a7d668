// Fixture submission "wrong-answers", chapter 8, exercise 3: the solution's step v3, with the
// scores scaled by 1 / D instead of the scale it is given (1 / sqrt(D)): finite, in place, and
// wrong wherever D > 1. The solution's file is compiled into this one with its namespace renamed
// (ch08::solution becomes ch08::wrong_answers_ex3), so that programs linking the solution library
// as well (the benchmark) see none of its functions twice.
#include <cmath>

#include "ch08.cuh"
#include "runtime/errors.cuh"

#define solution wrong_answers_ex3
#include "v3_flash_f32.cu"
#undef solution

namespace ch08 {

void student::flash_attention_f32(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H,
                                  int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  // 1 / D where the given scale (1 / sqrt(D)) belongs:
  wrong_answers_ex3::v3_attention_f32(q, k, v, o, lse, B, H, Sq, Sk, D, 1.0f / D, causal, scratch, stream);
}

}  // namespace ch08
