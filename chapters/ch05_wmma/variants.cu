// The learner's kernels as the harness sees them. Nothing to edit here.
#include "ch05.cuh"

namespace ch05 {

std::vector<Kernels> student_variants() {
  using namespace student;
  return {
      {"ex1_wmma_global", &wmma_global_f16_f32, &wmma_global_f16_f16, &wmma_global_bf16_f32, &wmma_global_bf16_bf16,
       nullptr, 70},
      {"ex2_wmma_smem", &wmma_smem_f16_f32, &wmma_smem_f16_f16, &wmma_smem_bf16_f32, &wmma_smem_bf16_bf16, nullptr, 70},
      {"ex3_wmma_int8", nullptr, nullptr, nullptr, nullptr, &wmma_int8, 75},
  };
}

}  // namespace ch05
