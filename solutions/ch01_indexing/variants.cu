// The ladder as the harness sees it, in the order a learner meets it.
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch01 {

WB_VARIANTS(ch01_solution, wb::Role::Solution) {
  using namespace solution;
  return {
      wb::variant("vector_add_program/f32", "v0_host_program", &v0_vector_add_program),
      wb::variant("vector_add/f32", "v1_one_per_thread", &v1_vector_add),
      wb::variant("rgb_to_grey/f32", "v1_one_per_thread", &v1_rgb_to_grey),
      wb::variant("matrix_add/f32", "v1_one_per_thread", &v1_matrix_add),
      wb::variant("vector_add/f32", "v2_two_per_thread", &v2_vector_add_x2),
      wb::variant("vector_add/f32", "v3_vectorized", &v3_vector_add),
      wb::variant("rgb_to_grey/f32", "v3_vectorized", &v3_rgb_to_grey),
      wb::variant("matrix_add/f32", "v3_vectorized", &v3_matrix_add),
  };
}

}  // namespace ch01
