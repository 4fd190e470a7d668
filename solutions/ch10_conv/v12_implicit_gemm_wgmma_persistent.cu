// v12 (bonus, Hopper only) — the launcher of v8's kernel made persistent: one block an SM of
// two producer and two consumer warpgroups, walking 128-pixel tiles, the next tile's loads
// under this tile's epilogue (done in registers, staged as BF16); v8 for everything else.
//
// The kernel lives in hopper/implicit_gemm_wgmma_persistent_kernel.cu (what changed from v8
// and why, the model that picks the tile), built for sm_90a alone in the chapter's Hopper
// library, as v8's; this file holds only host code and builds everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, C % 8 == 0, x and w 16-byte aligned (v8's conditions): the
//     persistent kernel, for any N, H, W, K, filter, stride and padding, unless the shape has
//     2^30 tiles or more, or the model's tile is (128, 64) with no more tiles than SMs (one
//     tile a block: nothing to overlap, and v8's (64, 128) step gathers half the A bytes per
//     MAC; at batch 32 the 7 x 7 layer, 37.2 us in v12's kernel against v8's 30.1);
//   * anything else: v8_implicit_gemm_wgmma, which runs v6 for C % 8 != 0 or unaligned x or w,
//     and refuses a GPU without wgmma. The tests cover both paths (and the forced tiles below
//     put the kernel itself through every edge shape).
// v12_forced_tiles() runs the same with one tile forced (the variant list's
// v12_implicit_gemm_wgmma_persistent_<tile>: tested on v8's tile shapes, benchmarked when named).
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v12_*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v12_implicit_gemm_wgmma_persistent,v8_implicit_gemm_wgmma,cudnn_fused
#include <span>

#include "hopper_launch.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

using hopper::PersistentTile;

// The persistent kernel with its tile fixed; v8 where it declines (v6 for v8's fallbacks; an
// error without wgmma).
template <PersistentTile kTile>
constexpr auto& run = hopper_or_fallback<hopper::conv_bn_relu_persistent, v8_implicit_gemm_wgmma, kTile>;

}  // namespace

// One tile each, whatever the model would pick on this GPU.
std::span<const ForcedTile> v12_forced_tiles() {
  static const ForcedTile tiles[] = {{"128x64", &run<PersistentTile::k128x64>},
                                     {"128x128", &run<PersistentTile::k128x128>}};
  return tiles;
}

void v12_implicit_gemm_wgmma_persistent(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                        ConvShape s, cudaStream_t stream) {
  run<PersistentTile::kAuto>(x, w, bn, residual, y, s, stream);
}

}  // namespace ch10::solution
