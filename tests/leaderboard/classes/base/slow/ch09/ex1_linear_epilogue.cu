// Fixture submission "slow", chapter 9, exercise 1: the solution's step v1 (one thread per output
// element, a loop over k). The solution's file is compiled into this one with its namespace renamed
// (ch09::solution becomes ch09::slow_ex1), so that programs linking the solution library as well
// (the benchmark) see none of its functions twice.
#include <mma.h>
#include <cstdint>

#include "ch09.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex1
#include "v1_naive.cu"
#undef solution

namespace ch09 {

void student::linear(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                     cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  slow_ex1::linear_naive<bf16>(x, w, b, y, M, N, K, epi, stream);
}

}  // namespace ch09
