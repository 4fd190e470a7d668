// The learner's launchers as the harness sees them. Nothing to edit here.
#include "ch06.cuh"
#include "declare/op.cuh"

namespace ch06 {

WB_VARIANTS(ch06_student, wb::Role::Student) {
  using namespace student;
  const std::string dir = "chapters/ch06_layernorm/";
  return {
      wb::variant("layernorm/f32", "ex1_layernorm_f32", &layernorm_f32).in_file(dir + "ex1_layernorm_f32.cu"),
      wb::variant("residual_layernorm/bf16", "ex2_residual_layernorm", &residual_layernorm)
          .in_file(dir + "ex2_residual_layernorm.cu"),
      wb::variant("residual_rmsnorm/bf16", "ex3_residual_rmsnorm", &residual_rmsnorm)
          .in_file(dir + "ex3_residual_rmsnorm.cu"),
      wb::variant("residual_layernorm/bf16", "ex4_decode_warp_per_row", &residual_layernorm_warp)
          .in_file(dir + "ex4_decode_warp_per_row.cu"),
  };
}

}  // namespace ch06
