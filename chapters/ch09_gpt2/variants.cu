// The learner's launchers as the harness sees them. Nothing to edit here.
// (Exercises 3 and 4 are host code that runs inside the model: models/gpt2/gpu.)
#include "ch09.cuh"
#include "declare/op.cuh"

namespace ch09 {

WB_VARIANTS(ch09_student, wb::Role::Student) {
  using namespace student;
  const std::string dir = "chapters/ch09_gpt2/";
  return {
      wb::variant("linear_bias/bf16", "ex1_linear_epilogue", &linear).in_file(dir + "ex1_linear_epilogue.cu"),
      wb::variant("linear_bias_gelu/bf16", "ex1_linear_epilogue", &linear).in_file(dir + "ex1_linear_epilogue.cu"),
      wb::variant("gemv/bf16", "ex2_gemv", &gemv).in_file(dir + "ex2_gemv.cu"),
      wb::variant("gemv_bias/bf16", "ex2_gemv", &gemv).in_file(dir + "ex2_gemv.cu"),
      wb::variant("gemv_bias_gelu/bf16", "ex2_gemv", &gemv).in_file(dir + "ex2_gemv.cu"),
  };
}

}  // namespace ch09
