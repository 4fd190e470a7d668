// Fixture submission "fast", chapter 5, exercise 3: the solution's step v4 (WMMA on warp tiles fed
// by a cp.async pipeline), the last step with INT8. The solution's file is compiled into this one
// with its namespace renamed (ch05::solution becomes ch05::fast_ex3), so that programs linking the
// solution library as well (the benchmark) see none of its functions twice.
#include "ch05.cuh"
#include "runtime/errors.cuh"

#define solution fast_ex3
#include "v4_cp_async_pipeline.cu"
#undef solution

namespace ch05 {

void student::wmma_int8(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                        cudaStream_t stream) {
  fast_ex3::v4_cp_async_pipeline<int8_t, int32_t>(M, N, K, A, B, C, D, stream);
}

}  // namespace ch05
