// The learner's launchers as the harness sees them. Nothing to edit here.
#include "ch11.cuh"
#include "host_io.cuh"
#include "declare/op.cuh"

namespace ch11 {

WB_VARIANTS(ch11_student, wb::Role::Student) {
  using namespace student;
  static const StagedProgram staged{&staging_create, &staging_destroy, &staged_axpb};
  return {
      staged_variant("ex1_pinned_staging", &staged).in_file("chapters/ch11_streams/ex1_pinned_staging.cu"),
      pipeline_variant("ex2_pipeline", &pipeline).in_file("chapters/ch11_streams/ex2_pipeline.cu"),
      wb::variant("fork_join/f32", "ex3_fork_join", &fork_join).in_file("chapters/ch11_streams/ex3_fork_join.cu"),
      wb::variant("chain/f32", "ex4_graph", &chain_graph).in_file("chapters/ch11_streams/ex4_graph.cu"),
  };
}

}  // namespace ch11
