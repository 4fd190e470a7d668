// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"
#include "host_io.cuh"
#include "declare/op.cuh"

namespace ch11 {
namespace {
const StagedProgram kV0{&solution::v0_staging_create, &solution::v0_staging_destroy, &solution::v0_staged_axpb};
}  // namespace

WB_VARIANTS(ch11_solution, wb::Role::Solution) {
  using namespace solution;
  return {
      wb::variant("staged_axpb/f32", "v0_pinned_staging", &kV0),
      pipeline_variant("v1_serial_chunks", &v1_pipeline).is_slow(),
      pipeline_variant("v2_two_streams", &v2_pipeline),
      wb::variant("fork_join/f32", "v2_two_streams", &v2_fork_join),
      pipeline_variant("v3_n_streams", &v3_pipeline),
      wb::variant("chain/f32", "v4_graph", &v4_chain_graph),
  };
}

}  // namespace ch11
