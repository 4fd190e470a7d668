// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"

namespace ch03 {

std::vector<Kernels> solution_variants() {
  using namespace solution;
  return {
      {"v1_interleaved", &v1_sum_f32, &v1_max_f32, &v1_sum_bf16, &v1_workspace_bytes, nullptr, nullptr},
      {"v2_sequential", &v2_sum_f32, &v2_max_f32, &v2_sum_bf16, &v1_workspace_bytes, nullptr, nullptr},
      {"v3_warp_shuffle", &v3_sum_f32, &v3_max_f32, &v3_sum_bf16, &v1_workspace_bytes, nullptr, nullptr},
      {"v4_coarsened_x1", &V4<1>::sum_f32, &V4<1>::max_f32, &V4<1>::sum_bf16, &v4_workspace_bytes, nullptr, nullptr},
      {"v4_coarsened_x4", &V4<4>::sum_f32, &V4<4>::max_f32, &V4<4>::sum_bf16, &v4_workspace_bytes, nullptr, nullptr},
      {"v4_coarsened_x16", &V4<16>::sum_f32, &V4<16>::max_f32, &V4<16>::sum_bf16, &v4_workspace_bytes, nullptr,
       nullptr},
      {"v5_one_pass", &v5_sum_f32, &v5_max_f32, &v5_sum_bf16, &v5_workspace_bytes, nullptr, nullptr},
      {"v6_row_sum", nullptr, nullptr, nullptr, nullptr, &v6_row_sum, &v6_row_workspace_bytes},
  };
}

}  // namespace ch03
