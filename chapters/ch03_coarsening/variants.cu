// The learner's launchers as the harness sees them. Nothing to edit here.
// Each call gets a workspace of the size your workspace_bytes / row_workspace_bytes ask for.
#include "ch03.cuh"
#include "declare/op.cuh"

namespace ch03 {

WB_VARIANTS(ch03_student, wb::Role::Student) {
  using namespace student;
  const auto ws = [](const wb::Shape& s) { return student::workspace_bytes(static_cast<int>(s["n"])); };
  const auto row_ws = [](const wb::Shape& s) {
    return student::row_workspace_bytes(static_cast<int>(s["rows"]), static_cast<int>(s["cols"]));
  };
  return {
      wb::variant("sum/f32", "ex1_sum", &sum_f32).in_file("chapters/ch03_coarsening/ex1_sum.cu").with_workspace(ws),
      wb::variant("max/f32", "ex2_max", &max_f32).in_file("chapters/ch03_coarsening/ex2_max.cu").with_workspace(ws),
      wb::variant("sum/bf16", "ex3_sum_bf16", &sum_bf16)
          .in_file("chapters/ch03_coarsening/ex3_sum_bf16.cu")
          .with_workspace(ws),
      wb::variant("row_sum/f32", "ex4_row_sum", &row_sum)
          .in_file("chapters/ch03_coarsening/ex4_row_sum.cu")
          .with_workspace(row_ws),
  };
}

}  // namespace ch03
