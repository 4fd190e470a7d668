// The learner's launchers as the harness sees them. Nothing to edit here.
// The naive transpose of exercise 2 is timed next to the tiled one of exercise 3.
#include "ch02.cuh"
#include "declare/op.cuh"

namespace ch02 {

WB_VARIANTS(ch02_student, wb::Role::Student) {
  using namespace student;
  return {
      wb::variant("strided_copy/f32", "ex1_strided_copy", &strided_copy)
          .in_file("chapters/ch02_coalescing/ex1_strided_copy.cu"),
      wb::variant("transpose/f32", "ex2_transpose_naive", &transpose_naive)
          .in_file("chapters/ch02_coalescing/ex2_transpose_naive.cu"),
      wb::variant("transpose/f32", "ex3_transpose_tiled", &transpose)
          .in_file("chapters/ch02_coalescing/ex3_transpose_tiled.cu"),
      wb::variant("transpose/bf16", "ex4_transpose_bf16", &transpose_bf16)
          .in_file("chapters/ch02_coalescing/ex4_transpose_bf16.cu"),
  };
}

}  // namespace ch02
