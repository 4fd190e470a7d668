// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"

namespace ch05 {

// The four FP16/BF16 type pairs of one launcher template, in Kernels' field order.
#define CH05_FLOAT_TYPES(fn)                                                \
  &solution::fn<__half, float>, &solution::fn<__half, __half>,              \
      &solution::fn<__nv_bfloat16, float>, &solution::fn<__nv_bfloat16, __nv_bfloat16>

std::vector<Kernels> solution_variants() {
  std::vector<Kernels> v = {
      {"v1_wmma_global", CH05_FLOAT_TYPES(v1_wmma_global), &solution::v1_wmma_global<int8_t, int32_t>, 70},
      {"v2_wmma_smem", CH05_FLOAT_TYPES(v2_wmma_smem), &solution::v2_wmma_smem<int8_t, int32_t>, 70},
      {"v3_wmma_warp_tiles", CH05_FLOAT_TYPES(v3_wmma_warp_tiles), &solution::v3_wmma_warp_tiles<int8_t, int32_t>, 70},
      {"v4_cp_async_pipeline", CH05_FLOAT_TYPES(v4_cp_async_pipeline),
       &solution::v4_cp_async_pipeline<int8_t, int32_t>, 80},
      {"v5_mma_sync", CH05_FLOAT_TYPES(v5_mma_sync), nullptr, 80},
  };
#ifdef WB_CH05_HOPPER
  v.push_back({"v6_wgmma_tma", CH05_FLOAT_TYPES(v6_wgmma_tma), nullptr, 90, true,
               "TMA + wgmma when K and N are multiples of 8, otherwise v5_mma_sync"});
#endif
  return v;
}

}  // namespace ch05
