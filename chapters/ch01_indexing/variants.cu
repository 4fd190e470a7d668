// The learner's launchers as the harness sees them. Nothing to edit here.
#include "ch01.cuh"
#include "declare/op.cuh"

namespace ch01 {

WB_VARIANTS(ch01_student, wb::Role::Student) {
  using namespace student;
  return {
      wb::variant("vector_add_program/f32", "ex0_host_program", &vector_add_program)
          .in_file("chapters/ch01_indexing/ex0_host_program.cu"),
      wb::variant("vector_add/f32", "ex1_vector_add", &vector_add).in_file("chapters/ch01_indexing/ex1_vector_add.cu"),
      wb::variant("vector_add/f32", "ex2_vector_add_x2", &vector_add_x2)
          .in_file("chapters/ch01_indexing/ex2_vector_add_x2.cu"),
      wb::variant("rgb_to_grey/f32", "ex3_rgb_to_grey", &rgb_to_grey)
          .in_file("chapters/ch01_indexing/ex3_rgb_to_grey.cu"),
      wb::variant("matrix_add/f32", "ex4_matrix_add", &matrix_add).in_file("chapters/ch01_indexing/ex4_matrix_add.cu"),
  };
}

}  // namespace ch01
