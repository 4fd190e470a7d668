// The ladder as the harness sees it, in the order a learner meets it. The first two
// transposes are teaching steps far below the roof: the default benchmark leaves them out
// (--full times them too).
#include <utility>

#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch02 {

WB_VARIANTS(ch02_solution, wb::Role::Solution) {
  using namespace solution;
  const struct {
    const char* step;
    StridedCopyFn* copy;  // nullptr: the step has no strided copy
    TransposeF32Fn* f32;
    TransposeBF16Fn* bf16;
    bool slow_transposes;
  } steps[] = {
      {"v1_naive", &v1_strided_copy, &v1_transpose_f32, &v1_transpose_bf16, true},
      {"v2_smem_tiled", nullptr, &v2_transpose_f32, &v2_transpose_bf16, true},
      {"v3_padded", nullptr, &v3_transpose_f32, &v3_transpose_bf16, false},
      {"v4_vectorized", &v4_strided_copy, &v4_transpose_f32, &v4_transpose_bf16, false},
  };
  wb::VariantList v;
  for (const auto& s : steps) {
    if (s.copy) v.push_back(wb::variant("strided_copy/f32", s.step, s.copy));
    for (wb::Variant t : {wb::variant("transpose/f32", s.step, s.f32), wb::variant("transpose/bf16", s.step, s.bf16)}) {
      if (s.slow_transposes) t.is_slow();
      v.push_back(std::move(t));
    }
  }
  return v;
}

}  // namespace ch02
