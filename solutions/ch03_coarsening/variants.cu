// The ladder as the harness sees it, in the order a learner meets it, each step with the
// workspace its launchers ask for. The multi-pass steps v1 to v3 and the smaller coarsening
// factors are teaching steps: the default benchmark leaves them out (--full times them too).
#include "ladder.cuh"
#include "declare/op.cuh"

namespace ch03 {
namespace {

// The three full reductions of one ladder step, all with the same workspace.
void add_step(wb::VariantList& out, const std::string& name, ReduceFn* sum, ReduceFn* max, ReduceBf16Fn* sum_bf16,
              WorkspaceFn* ws, bool slow) {
  const auto bytes = [ws](const wb::Shape& s) { return ws(static_cast<int>(s["n"])); };
  for (auto v : {wb::variant("sum/f32", name, sum), wb::variant("max/f32", name, max),
                 wb::variant("sum/bf16", name, sum_bf16)}) {
    v.with_workspace(bytes);
    if (slow) v.is_slow();
    out.push_back(std::move(v));
  }
}

}  // namespace

WB_VARIANTS(ch03_solution, wb::Role::Solution) {
  using namespace solution;
  wb::VariantList out;
  add_step(out, "v1_interleaved", &v1_sum_f32, &v1_max_f32, &v1_sum_bf16, &v1_workspace_bytes, true);
  add_step(out, "v2_sequential", &v2_sum_f32, &v2_max_f32, &v2_sum_bf16, &v1_workspace_bytes, true);
  add_step(out, "v3_warp_shuffle", &v3_sum_f32, &v3_max_f32, &v3_sum_bf16, &v1_workspace_bytes, true);
  add_step(out, "v4_coarsened_x1", &V4<1>::sum_f32, &V4<1>::max_f32, &V4<1>::sum_bf16, &v4_workspace_bytes, true);
  add_step(out, "v4_coarsened_x4", &V4<4>::sum_f32, &V4<4>::max_f32, &V4<4>::sum_bf16, &v4_workspace_bytes, false);
  add_step(out, "v4_coarsened_x16", &V4<16>::sum_f32, &V4<16>::max_f32, &V4<16>::sum_bf16, &v4_workspace_bytes, true);
  add_step(out, "v5_one_pass", &v5_sum_f32, &v5_max_f32, &v5_sum_bf16, &v5_workspace_bytes, false);
  out.push_back(wb::variant("row_sum/f32", "v6_row_sum", &v6_row_sum).with_workspace([](const wb::Shape& s) {
    return v6_row_workspace_bytes(static_cast<int>(s["rows"]), static_cast<int>(s["cols"]));
  }));
  // The atomic finish, checked like every step (its sum changes in the last bits from run to
  // run, which the sums' spec accepts); an alternative to v5 rather than a step past it, so
  // the default benchmark leaves it out and v5 stays the ladder's best.
  out.push_back(wb::variant("sum/f32", "v7_atomic_sum", &v7_atomic_sum_f32)
                    .with_workspace([](const wb::Shape& s) { return v7_workspace_bytes(static_cast<int>(s["n"])); })
                    .is_slow()
                    .with_note("atomicAdd of each block's total: not bit-reproducible"));
  return out;
}

}  // namespace ch03
