// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"

namespace ch02 {

std::vector<Kernels> solution_variants() {
  using namespace solution;
  return {
      {"v1_naive", &v1_strided_copy, &v1_transpose_f32, &v1_transpose_bf16},
      {"v2_smem_tiled", nullptr, &v2_transpose_f32, &v2_transpose_bf16},
      {"v3_padded", nullptr, &v3_transpose_f32, &v3_transpose_bf16},
      {"v4_vectorized", &v4_strided_copy, &v4_transpose_f32, &v4_transpose_bf16},
  };
}

}  // namespace ch02
