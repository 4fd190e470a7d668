// Fixture submission "fast", chapter 8, exercise 2: the solution's step v2 (scores and softmax in
// one kernel; v1's file comes along for the P V product that v2's other launcher calls). The
// solution's file is compiled into this one with its namespace renamed (ch08::solution becomes
// ch08::fast_ex2), so that programs linking the solution library as well (the benchmark) see none
// of its functions twice.
#include <cmath>

#include "ch08.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex2
#include "v1_unfused.cu"
#undef solution

#define solution fast_ex2
#include "v2_fused_scores_softmax.cu"
#undef solution

namespace ch08 {

void student::fused_scores_softmax(const float* q, const float* k, float* p, int B, int H, int Sq, int Sk, int D,
                                   float scale, bool causal, cudaStream_t stream) {
  fast_ex2::v2_probs_f32(q, k, p, B, H, Sq, Sk, D, scale, causal, stream);
}

}  // namespace ch08
