// Fixture submission "fast", chapter 2, exercise 3: the solution's step v4 (vector loads and stores
// through a swizzled tile). The solution's file is compiled into this one with its namespace
// renamed (ch02::solution becomes ch02::fast_ex3), so that programs linking the solution library as
// well (the benchmark) see none of its functions twice.
#include <algorithm>
#include <cstdint>

#include "ch02.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex3
#include "v4_vectorized.cu"
#undef solution

namespace ch02 {

void student::transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  fast_ex3::v4_transpose_f32(in, out, rows, cols, stream);
}

}  // namespace ch02
