// Fixture submission "slow", chapter 3, exercise 1: the solution's step v1 (the textbook tree with
// interleaved addressing, one element per thread, a pass per level). The solution's file is
// compiled into this one with its namespace renamed (ch03::solution becomes ch03::slow_ex1), so
// that programs linking the solution library as well (the benchmark) see none of its functions
// twice.
#include "ch03.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex1
#include "v1_interleaved.cu"
#undef solution

namespace ch03 {

// The same workspace serves exercises 1 to 3, which all run the same step.
size_t student::workspace_bytes(int n) { return slow_ex1::v1_workspace_bytes(n); }

void student::sum_f32(const float* x, int n, float* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream) {
  slow_ex1::v1_sum_f32(x, n, out, workspace, workspace_bytes, stream);
}

}  // namespace ch03
