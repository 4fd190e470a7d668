// The learner's launchers as the harness sees them. Nothing to edit here.
#include <string>

#include "ch10.cuh"
#include "declare/op.cuh"

namespace ch10 {

WB_VARIANTS(ch10_student, wb::Role::Student) {
  using namespace student;
  const std::string dir = "chapters/ch10_conv/";
  return {
      wb::variant("conv2d/f32", "ex1_direct", &conv2d_direct).in_file(dir + "ex1_direct.cu"),
      wb::variant("conv2d_bn_relu/bf16", "ex2_implicit_gemm", &conv_implicit_gemm)
          .in_file(dir + "ex2_implicit_gemm.cu")
          .needs_cc(80),
      wb::variant("conv2d_bn_relu/bf16", "ex3_implicit_gemm_mma", &conv_implicit_mma)
          .in_file(dir + "ex3_implicit_gemm_mma.cu")
          .needs_cc(80),
      wb::variant("depthwise3x3/bf16", "ex4_depthwise", &depthwise3x3).in_file(dir + "ex4_depthwise.cu"),
  };
}

}  // namespace ch10
