// Fixture submission "slow", chapter 9, exercise 2: the solution's step v1 (one thread per output).
// The solution's file is compiled into this one with its namespace renamed (ch09::solution becomes
// ch09::slow_ex2), so that programs linking the solution library as well (the benchmark) see none
// of its functions twice.
#include <cstdint>

#include "ch09.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex2
#include "v1_naive.cu"
#undef solution

namespace ch09 {

void student::gemv(const bf16* x, const bf16* w, const bf16* b, bf16* y, int N, int K, Epilogue epi,
                   cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  slow_ex2::gemv_naive<bf16>(x, w, b, y, N, K, epi, stream);
}

}  // namespace ch09
