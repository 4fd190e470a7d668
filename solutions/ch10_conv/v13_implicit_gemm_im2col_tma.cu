// v13 (bonus, Hopper only) — the launcher of v12's persistent kernel with the im2col gather done
// by the copy engine: one TMA copy in im2col mode a step brings the 128 rows of A (the padding
// zero-filled), so one thread issues all of a block's copies; v12 for everything else.
//
// The kernel lives in hopper/implicit_gemm_im2col_tma_kernel.cu (what changed from v12 and
// why, the im2col tensor map), built for sm_90a alone in the chapter's Hopper library, as v8's
// and v12's; this file holds only host code and builds everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, C % 8 == 0, x and w 16-byte aligned (v8's conditions), and a shape
//     that an im2col tensor map describes (a stride of at most 8, the padding and the box's
//     corners within the map's 8-bit offsets, filters of at most 64 taps a side, fewer than 2^30
//     tiles): the v13 kernel, (128, 64) tiles keeping their filters resident where a block's
//     tiles share one filter tile and its steps fit (at batch 32: the 56 x 56 and 1 x 1 layers),
//     there in the ping-pong form (each consumer warpgroup on whole tiles, one multiplying while
//     the other runs its epilogue), else (128, 64) or (128, 128) tiles as the launcher's model
//     picks;
//   * anything else: v12_implicit_gemm_wgmma_persistent (which hands its own exceptions to v8,
//     and v8 to v6). The tests cover both paths, and the forced tiles below put the kernel itself
//     through every edge shape.
// v13_forced_tiles() runs the same with one tile forced (the variant list's
// v13_implicit_gemm_im2col_tma_<tile>: tested on v12's tile shapes and more with resident
// filters, benchmarked when named).
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v13_*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v13_implicit_gemm_im2col_tma,v12_implicit_gemm_wgmma_persistent,cudnn_fused
#include <span>

#include "hopper_launch.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

using hopper::PersistentTile;
using Schedule = hopper::Im2colSchedule;

// The kernel with its tile and schedule fixed; v12 where it declines (v12's own fallbacks; an
// error without wgmma).
template <PersistentTile kTile, Schedule kSchedule>
constexpr auto& run =
    hopper_or_fallback<hopper::conv_bn_relu_im2col, v12_implicit_gemm_wgmma_persistent, kTile, kSchedule>;

}  // namespace

// One tile each, whatever the launcher would pick on this GPU: (128, 64) and (128, 128) with
// every step's filters loaded with its A, (128, 64) with the filters resident (where they apply;
// (128, 64) as the first elsewhere), and those resident tiles in the ping-pong form (where they
// apply; v13's other plans elsewhere).
std::span<const ForcedTile> v13_forced_tiles() {
  static const ForcedTile tiles[] = {{"128x64", &run<PersistentTile::k128x64, Schedule::kAlone>},
                                     {"128x128", &run<PersistentTile::k128x128, Schedule::kAlone>},
                                     {"128x64_resident", &run<PersistentTile::k128x64, Schedule::kResident>},
                                     {"pingpong", &run<PersistentTile::kAuto, Schedule::kPingPong>}};
  return tiles;
}

void v13_implicit_gemm_im2col_tma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                                  cudaStream_t stream) {
  run<PersistentTile::kAuto, Schedule::kAuto>(x, w, bn, residual, y, s, stream);
}

}  // namespace ch10::solution
