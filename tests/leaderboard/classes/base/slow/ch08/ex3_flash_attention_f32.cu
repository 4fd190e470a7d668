// Fixture submission "slow", chapter 8, exercise 3: the solution's step v3 (the online softmax),
// run twice per call (the chapter has no slower step for this op without a scratch buffer): right,
// and twice the time. The solution's file is compiled into this one with its namespace renamed
// (ch08::solution becomes ch08::slow_ex3), so that programs linking the solution library as well
// (the benchmark) see none of its functions twice.
#include <cmath>

#include "ch08.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex3
#include "v3_flash_f32.cu"
#undef solution

namespace ch08 {

void student::flash_attention_f32(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H,
                                  int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  slow_ex3::v3_attention_f32(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, scratch, stream);
  slow_ex3::v3_attention_f32(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, scratch, stream);  // once more
}

}  // namespace ch08
