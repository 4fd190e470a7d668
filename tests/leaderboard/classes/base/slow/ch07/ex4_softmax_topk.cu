// Fixture submission "slow", chapter 7, exercise 4: the solution's step v3 (one block per row). The
// solution's file is compiled into this one with its namespace renamed (ch07::solution becomes
// ch07::slow_ex4), so that programs linking the solution library as well (the benchmark) see none
// of its functions twice.
#include "ch07.cuh"
#include "runtime/errors.cuh"
#include "tune/tune.h"

#define solution slow_ex4
#include "v3_block_per_row.cu"
#undef solution

namespace ch07 {

void student::softmax_topk(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                           cudaStream_t stream) {
  slow_ex4::softmax_topk_block(x, values, indices, B, V, k, workspace, stream);
}

void student::softmax_topk_probs(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                 void* workspace, cudaStream_t stream) {
  slow_ex4::softmax_topk_probs_block(x, probs, values, indices, B, V, k, workspace, stream);
}

}  // namespace ch07
