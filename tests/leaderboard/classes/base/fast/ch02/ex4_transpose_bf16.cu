// Fixture submission "fast", chapter 2, exercise 4: the solution's step v4 on BF16. The solution's
// file is compiled into this one with its namespace renamed (ch02::solution becomes
// ch02::fast_ex4), so that programs linking the solution library as well (the benchmark) see none
// of its functions twice.
#include <algorithm>
#include <cstdint>

#include "ch02.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex4
#include "v4_vectorized.cu"
#undef solution

namespace ch02 {

void student::transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols,
                             cudaStream_t stream) {
  fast_ex4::v4_transpose_bf16(in, out, rows, cols, stream);
}

}  // namespace ch02
