// Fixture submission "slow", chapter 3, exercise 2: the solution's step v1. The solution's file is
// compiled into this one with its namespace renamed (ch03::solution becomes ch03::slow_ex2), so
// that programs linking the solution library as well (the benchmark) see none of its functions
// twice.
#include "ch03.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex2
#include "v1_interleaved.cu"
#undef solution

namespace ch03 {

void student::max_f32(const float* x, int n, float* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream) {
  slow_ex2::v1_max_f32(x, n, out, workspace, workspace_bytes, stream);
}

}  // namespace ch03
