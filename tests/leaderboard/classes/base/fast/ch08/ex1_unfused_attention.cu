// Fixture submission "fast", chapter 8, exercise 1: the solution's step v3 (the online softmax, no
// Sq x Sk buffer; the scratch buffer is not used). The solution's file is compiled into this one
// with its namespace renamed (ch08::solution becomes ch08::fast_ex1), so that programs linking the
// solution library as well (the benchmark) see none of its functions twice.
#include <cmath>

#include "ch08.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex1
#include "v3_flash_f32.cu"
#undef solution

namespace ch08 {

void student::unfused_attention(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H,
                                int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  fast_ex1::v3_attention_f32(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, scratch, stream);
}

}  // namespace ch08
