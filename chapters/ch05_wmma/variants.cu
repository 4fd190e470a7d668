// The learner's kernels as the harness sees them. Nothing to edit here.
#include "ch05.cuh"
#include "declare/op.cuh"

namespace ch05 {

WB_VARIANTS(ch05_student, wb::Role::Student) {
  using namespace student;
  constexpr const char* kEx1 = "chapters/ch05_wmma/ex1_wmma_global.cu";
  constexpr const char* kEx2 = "chapters/ch05_wmma/ex2_wmma_smem.cu";
  constexpr const char* kEx3 = "chapters/ch05_wmma/ex3_wmma_int8.cu";
  constexpr const char* kEx4 = "chapters/ch05_wmma/ex4_fp8_gemm.cu";
  const auto at = [](const char* op, const char* name, auto* fn, const char* file, Types t) {
    return wb::variant(std::string("gemm/") + op, name, fn).in_file(file).needs_cc(types_min_cc(t));
  };
  return {
      at("f16_f32", "ex1_wmma_global", &wmma_global_f16_f32, kEx1, Types::F16_F32),
      at("f16_f16", "ex1_wmma_global", &wmma_global_f16_f16, kEx1, Types::F16_F16),
      at("bf16_f32", "ex1_wmma_global", &wmma_global_bf16_f32, kEx1, Types::BF16_F32),
      at("bf16_bf16", "ex1_wmma_global", &wmma_global_bf16_bf16, kEx1, Types::BF16_BF16),
      at("f16_f32", "ex2_wmma_smem", &wmma_smem_f16_f32, kEx2, Types::F16_F32),
      at("f16_f16", "ex2_wmma_smem", &wmma_smem_f16_f16, kEx2, Types::F16_F16),
      at("bf16_f32", "ex2_wmma_smem", &wmma_smem_bf16_f32, kEx2, Types::BF16_F32),
      at("bf16_bf16", "ex2_wmma_smem", &wmma_smem_bf16_bf16, kEx2, Types::BF16_BF16),
      at("i8_i32", "ex3_wmma_int8", &wmma_int8, kEx3, Types::I8_I32),
      // FP8 on CUDA cores runs from sm_80 (E4M3 is decoded in software there).
      wb::variant("fp8_quantize/bf16_e4m3", "ex4_fp8_gemm", &fp8_quantize).in_file(kEx4).needs_cc(80),
      wb::variant("gemm_fp8/e4m3_bf16", "ex4_fp8_gemm", &fp8_gemm).in_file(kEx4).needs_cc(80),
      wb::variant("gemm_fp8_block/e4m3_bf16", "ex4_fp8_gemm", &fp8_gemm_block_scaled).in_file(kEx4).needs_cc(80),
  };
}

}  // namespace ch05
