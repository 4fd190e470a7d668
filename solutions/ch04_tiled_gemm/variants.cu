// The ladder as the harness sees it, in the order a learner meets it, then every tile
// configuration of v8 that the autotuner may pick: v8_double_buffering runs whichever one
// configs/ch04_sgemm.json names for this GPU and shape, so each must be right, not only the
// default. v8 is tuned by v8_space() (ch04_tune, harness/tune).
//
// The default benchmark (4096^3) runs the steps from v4 on and v8 as this GPU configures
// it; v1..v3 (seconds per call at that size) and the single configurations run under --full.
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch04 {

WB_VARIANTS(ch04_solution, wb::Role::Solution) {
  using namespace solution;
  wb::VariantList out = {
      wb::variant("sgemm/f32", "v1_naive", &v1_naive).is_slow(),
      wb::variant("sgemm/f32", "v2_coalesced", &v2_coalesced).is_slow(),
      wb::variant("sgemm/f32", "v3_smem_tiling", &v3_smem_tiling).is_slow(),
      wb::variant("sgemm/f32", "v4_1d_register_blocking", &v4_1d_register_blocking),
      wb::variant("sgemm/f32", "v5_2d_register_blocking", &v5_2d_register_blocking),
      wb::variant("sgemm/f32", "v6_vectorized_smem", &v6_vectorized_smem),
      wb::variant("sgemm/f32", "v7_warp_tiling", &v7_warp_tiling),
      wb::variant("sgemm/f32", "v8_double_buffering", &v8_double_buffering).tuned_by(v8_space()),
  };
  // Each configuration on the awkward shapes, with the three argument sets of the spec
  // (packed with beta = 0; pad 4 with beta != 0; an odd pad with beta != 0).
  std::vector<wb::Shape> awkward;
  const int64_t extents[][3] = {{1, 1, 1},       {127, 131, 137}, {257, 255, 263},
                                {1025, 129, 65}, {33, 2049, 96},  {256, 256, 1}};
  const struct {
    int64_t pad;
    double alpha, beta;
  } sets[] = {{0, 1.0, 0.0}, {4, -1.5, 0.75}, {3, 0.75, -1.25}};
  for (const auto& e : extents) {
    for (const auto& a : sets) {
      awkward.push_back(wb::Shape{{"M", e[0]}, {"N", e[1]}, {"K", e[2]}, {"pad", a.pad}}
                            .set_param("alpha", a.alpha)
                            .set_param("beta", a.beta));
    }
  }
  for (const V8Entry& e : v8_registry()) {
    out.push_back(wb::variant("sgemm/f32", "v8_" + e.config.name(), e.launch)
                      .is_slow()
                      .on(awkward)
                      .with_note("v8 with the tile configuration " + e.config.name()));
  }
  return out;
}

}  // namespace ch04
