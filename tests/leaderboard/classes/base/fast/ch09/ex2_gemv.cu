// Fixture submission "fast", chapter 9, exercise 2: the solution's step v4 (a warp per output,
// 16-byte loads of W). The solution's file is compiled into this one with its namespace renamed
// (ch09::solution becomes ch09::fast_ex2), so that programs linking the solution library as well
// (the benchmark) see none of its functions twice.
#include <cstdint>

#include "ch09.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex2
#include "v4_gemv_warp.cu"
#undef solution

namespace ch09 {

void student::gemv(const bf16* x, const bf16* w, const bf16* b, bf16* y, int N, int K, Epilogue epi,
                   cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  fast_ex2::gemv_warp<bf16>(x, w, b, y, N, K, epi, stream);
}

}  // namespace ch09
