// The learner's launchers as the harness sees them. Nothing to edit here.
#include "ch04.cuh"
#include "declare/op.cuh"

namespace ch04 {

WB_VARIANTS(ch04_student, wb::Role::Student) {
  using namespace student;
  return {
      wb::variant("sgemm/f32", "ex1_naive", &sgemm_naive).in_file("chapters/ch04_tiled_gemm/ex1_naive.cu"),
      wb::variant("sgemm/f32", "ex2_smem_tiling", &sgemm_smem).in_file("chapters/ch04_tiled_gemm/ex2_smem_tiling.cu"),
      wb::variant("sgemm/f32", "ex3_register_tiling", &sgemm_registers)
          .in_file("chapters/ch04_tiled_gemm/ex3_register_tiling.cu"),
  };
}

}  // namespace ch04
