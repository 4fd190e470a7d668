// The learner's kernels as the harness sees them. Nothing to edit here.
#include "ch01.cuh"

namespace ch01 {

std::vector<Kernels> student_variants() {
  return {{"student", &student::vector_add, &student::vector_add_x2, &student::rgb_to_grey, &student::matrix_add}};
}

}  // namespace ch01
