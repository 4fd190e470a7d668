// Fixture submission "wrong-answers", chapter 9, exercise 1: the solution's step v3 (WMMA BF16
// tiles, fused epilogue), with the GELU of the BiasGelu epilogue left out: y = x W^T + b is right,
// gelu_tanh(x W^T + b) is not. The solution's file is compiled into this one with its namespace
// renamed (ch09::solution becomes ch09::wrong_answers_ex1), so that programs linking the solution
// library as well (the benchmark) see none of its functions twice.
#include <mma.h>
#include <cstdint>

#include "ch09.cuh"
#include "runtime/errors.cuh"

#define solution wrong_answers_ex1
#include "v3_wmma_epilogue.cu"
#undef solution

namespace ch09 {

void student::linear(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                     cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  // the GELU forgotten:
  wrong_answers_ex1::linear_wmma(x, w, b, y, M, N, K, epi == Epilogue::BiasGelu ? Epilogue::Bias : epi, stream);
}

}  // namespace ch09
