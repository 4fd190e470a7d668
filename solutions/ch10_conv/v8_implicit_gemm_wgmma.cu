// v8 (bonus, Hopper only) — the launcher: wgmma + TMA + cp.async where the shape allows, v6
// elsewhere.
//
// The kernel lives in hopper/implicit_gemm_wgmma_kernel.cu (what changed from v6 and why, the
// barriers, the swizzle, the tiles), built for sm_90a alone in its own library
// (workbook_add_hopper_library, cmake/Workbook.cmake; chapters/ch10_conv/extra.cmake): wgmma
// exists only in the architecture-specific sm_90a target, and the rest of the ladder is built
// for every GPU in the architecture list. This file holds only host code, so it builds
// everywhere; the variant list names v8 only in a build that has the Hopper library.
//
// Which path a call takes:
//   * compute capability 9.0, C % 8 == 0, x and w 16-byte aligned: the wgmma kernel, for any
//     N, H, W, K, filter, stride and padding (zero-fill at the padding and past C and K).
//   * any other shape (C = 1, 3, 13 ...; unaligned x or w): v6_implicit_gemm_pipelined, which
//     itself hands C % 8 != 0 to v4. The tests cover both paths.
//   * any other GPU: an error. The tests skip this variant there, with the reason.
// v8_forced_tiles() runs the same with one tile forced, one function a tile (the variant list's
// v8_implicit_gemm_wgmma_<tile>, slow steps: tested, benchmarked only when named).
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='conv2d_bn_relu/bf16/v8_implicit_gemm_wgmma.*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu
//      --impl=v8_implicit_gemm_wgmma,v6_implicit_gemm_pipelined,cudnn_fused
#include <span>
#include <stdexcept>

#include "runtime/device.cuh"
#include "ladder.cuh"

#include "hopper/hopper.cuh"  // declarations only: the definitions are built where WB_CH10_HOPPER is

namespace ch10::solution {
namespace {

using hopper::Tile;

void run(Tile tile, const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
         cudaStream_t stream) {
  require_valid(s);
#ifdef WB_CH10_HOPPER
  static const bool hopper = wb::query_device().has_wgmma();
  if (hopper) {
    if (hopper::supports(s, x, w)) {
      hopper::conv_bn_relu(x, w, bn, residual, y, s, stream, tile);
    } else {
      v6_implicit_gemm_pipelined(x, w, bn, residual, y, s, stream);
    }
    return;
  }
#endif
  (void)tile, (void)x, (void)w, (void)bn, (void)residual, (void)y, (void)stream;
  throw std::runtime_error(
      "v8_implicit_gemm_wgmma needs sm_90a (Hopper, compute capability 9.0) and a build that "
      "includes it (sm_90 in CMAKE_CUDA_ARCHITECTURES): wgmma and TMA do not exist elsewhere");
}

}  // namespace

void v8_implicit_gemm_wgmma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                            cudaStream_t stream) {
  run(Tile::kAuto, x, w, bn, residual, y, s, stream);
}

// One tile each, whatever the shape: the launcher's choice depends on the SM count, so the
// test shapes alone would leave some tiles unchecked on any one GPU.
namespace {
template <Tile kTile>
void run_forced(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                cudaStream_t stream) {
  run(kTile, x, w, bn, residual, y, s, stream);
}
}  // namespace

std::span<const ForcedTile> v8_forced_tiles() {
  static const ForcedTile tiles[] = {{"128x128", &run_forced<Tile::k128x128>},
                                     {"64x128", &run_forced<Tile::k64x128>},
                                     {"128x64", &run_forced<Tile::k128x64>},
                                     {"64x64", &run_forced<Tile::k64x64>}};
  return tiles;
}

}  // namespace ch10::solution
