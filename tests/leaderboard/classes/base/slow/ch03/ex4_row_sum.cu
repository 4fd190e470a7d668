// Fixture submission "slow", chapter 3, exercise 4: the solution's step v6, run twice per call (the
// chapter has no slower row sum): right, and twice the time. The solution's file is compiled into
// this one with its namespace renamed (ch03::solution becomes ch03::slow_ex4), so that programs
// linking the solution library as well (the benchmark) see none of its functions twice.
#include "ch03.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex4
#include "v6_row_sum.cu"
#undef solution

namespace ch03 {

size_t student::row_workspace_bytes(int rows, int cols) {
  return slow_ex4::v6_row_workspace_bytes(rows, cols);
}

void student::row_sum(const float* x, int rows, int cols, float* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream) {
  slow_ex4::v6_row_sum(x, rows, cols, out, workspace, workspace_bytes, stream);
  slow_ex4::v6_row_sum(x, rows, cols, out, workspace, workspace_bytes, stream);  // once more
}

}  // namespace ch03
