// The learner's launchers as the harness sees them. Nothing to edit here.
// (Exercises 3 and 4 are host code that runs inside the model: models/gpt2/gpu.)
#include <string>
#include <vector>

#include "ch09.cuh"
#include "declare/op.cuh"

namespace ch09 {

WB_VARIANTS(ch09_student, wb::Role::Student) {
  using namespace student;
  // Each exercise serves several ops: exercise 1 the two linear epilogues, exercise 2 the three GEMVs.
  wb::VariantList out;
  for (const char* op : {"linear_bias/bf16", "linear_bias_gelu/bf16"}) {
    out.push_back(wb::variant(op, "ex1_linear_epilogue", &linear).in_file("chapters/ch09_gpt2/ex1_linear_epilogue.cu"));
  }
  for (const char* op : {"gemv/bf16", "gemv_bias/bf16", "gemv_bias_gelu/bf16"}) {
    out.push_back(wb::variant(op, "ex2_gemv", &gemv).in_file("chapters/ch09_gpt2/ex2_gemv.cu"));
  }
  return out;
}

}  // namespace ch09
