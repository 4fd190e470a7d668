// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"

namespace ch04 {

std::vector<Kernels> solution_variants() {
  using namespace solution;
  return {
      {"v1_naive", &v1_naive},
      {"v2_coalesced", &v2_coalesced},
      {"v3_smem_tiling", &v3_smem_tiling},
      {"v4_1d_register_blocking", &v4_1d_register_blocking},
      {"v5_2d_register_blocking", &v5_2d_register_blocking},
      {"v6_vectorized_smem", &v6_vectorized_smem},
      {"v7_warp_tiling", &v7_warp_tiling},
      {"v8_double_buffering", &v8_double_buffering},
  };
}

}  // namespace ch04
