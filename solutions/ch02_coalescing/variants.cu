// The ladder as the harness sees it, in the order a learner meets it. The first two
// transposes are teaching steps far below the roof: the default benchmark leaves them out
// (--full times them too).
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch02 {

WB_VARIANTS(ch02_solution, wb::Role::Solution) {
  using namespace solution;
  return {
      wb::variant("strided_copy/f32", "v1_naive", &v1_strided_copy),
      wb::variant("transpose/f32", "v1_naive", &v1_transpose_f32).is_slow(),
      wb::variant("transpose/bf16", "v1_naive", &v1_transpose_bf16).is_slow(),
      wb::variant("transpose/f32", "v2_smem_tiled", &v2_transpose_f32).is_slow(),
      wb::variant("transpose/bf16", "v2_smem_tiled", &v2_transpose_bf16).is_slow(),
      wb::variant("transpose/f32", "v3_padded", &v3_transpose_f32),
      wb::variant("transpose/bf16", "v3_padded", &v3_transpose_bf16),
      wb::variant("strided_copy/f32", "v4_vectorized", &v4_strided_copy),
      wb::variant("transpose/f32", "v4_vectorized", &v4_transpose_f32),
      wb::variant("transpose/bf16", "v4_vectorized", &v4_transpose_bf16),
  };
}

}  // namespace ch02
