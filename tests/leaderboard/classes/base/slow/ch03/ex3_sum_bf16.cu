// Fixture submission "slow", chapter 3, exercise 3: the solution's step v1 on BF16. The solution's
// file is compiled into this one with its namespace renamed (ch03::solution becomes
// ch03::slow_ex3), so that programs linking the solution library as well (the benchmark) see none
// of its functions twice.
#include "ch03.cuh"
#include "runtime/errors.cuh"

#define solution slow_ex3
#include "v1_interleaved.cu"
#undef solution

namespace ch03 {

void student::sum_bf16(const __nv_bfloat16* x, int n, float* out, void* workspace, size_t workspace_bytes,
                       cudaStream_t stream) {
  slow_ex3::v1_sum_bf16(x, n, out, workspace, workspace_bytes, stream);
}

}  // namespace ch03
