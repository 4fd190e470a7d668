// v14 (Hopper only) — the launcher of v13's machinery with mma.sync consumers: one block an SM,
// one thread bringing A by TMA in im2col mode (and the filters by TMA, resident where v13 keeps
// them) into swizzled stages on full / empty mbarriers, and plain warps multiplying with
// ldmatrix + mma.sync.m16n8k16 (v6's instructions), the fused epilogue on their registers; v11
// for everything else.
//
// The step before on mma.sync is v11 (v6's tiles, split over a cluster where a model says it
// pays): its threads gather A themselves, 16 bytes a cp.async, and meet at a __syncthreads every
// step, and it reaches 0.53-0.76x cuDNN's fused graph. v13 showed on wgmma that handing the
// gather to the copy engine is most of what separates such a kernel from cuDNN; v14 asks
// whether the same holds for mma.sync, whose tensor throughput on an H200 is about 0.6x wgmma's
// while cuDNN runs these layers well below either peak. The kernel lives in
// hopper/implicit_gemm_mma_tma_kernel.cu (what changed and why), built for sm_90a alone in the
// chapter's Hopper library; this file holds only host code and builds everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, C % 8 == 0, x and w 16-byte aligned, and a shape that an im2col
//     tensor map describes (v13's conditions): the v14 kernel on 8 consumer warps, (128, 64) tiles
//     keeping their filters resident where a block's tiles share one filter tile and its steps fit
//     (at batch 32: the 56 x 56 and 1 x 1 layers), else the tile of (128, 64), (128, 128) and
//     (96, 128) that the launcher's model picks (at batch 32: (128, 64) on the 7 x 7 layer,
//     (96, 128) on the 28 x 28, 14 x 14 and stride-2 layers);
//   * anything else: v11_implicit_gemm_cluster_splitk (which runs v6 where it does not split,
//     and v6 hands C % 8 != 0 to v4). The tests cover both paths, and the forced forms below put
//     the kernel itself through every edge shape.
// v14_forced_tiles() runs the same with one tile forced, or on 4 consumer warps instead of 8 (the
// variant list's v14_implicit_gemm_mma_tma_<form>: tested on v12's tile shapes, benchmarked when
// named).
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v14_*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v14_implicit_gemm_mma_tma,v13_implicit_gemm_im2col_tma,v11_implicit_gemm_cluster_splitk,reference
#include <span>

#include "hopper_launch.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

using hopper::MmaTile;

// The kernel with its tile and consumer warps fixed (sm_90a's TMA and mbarriers; the multiplies
// themselves are mma.sync); v11 where it declines (v6 and v4 for v11's own fallbacks).
template <MmaTile kTile, int kWarps>
constexpr auto& run =
    hopper_or_fallback<hopper::conv_bn_relu_mma_im2col, v11_implicit_gemm_cluster_splitk, kTile, kWarps>;

}  // namespace

// One form each, whatever the launcher would pick on this GPU: (128, 64), (128, 128) and
// (96, 128) with every step's filters loaded with its A, (128, 64) with the filters resident
// (where they apply; (128, 64) as the first elsewhere), all on 8 consumer warps; and v14's own
// choice on 4 consumer warps, its first form.
std::span<const ForcedTile> v14_forced_tiles() {
  static const ForcedTile tiles[] = {{"128x64", &run<MmaTile::k128x64, 8>},
                                     {"128x128", &run<MmaTile::k128x128, 8>},
                                     {"96x128", &run<MmaTile::k96x128, 8>},
                                     {"128x64_resident", &run<MmaTile::k128x64Resident, 8>},
                                     {"4warps", &run<MmaTile::kAuto, 4>}};
  return tiles;
}

void v14_implicit_gemm_mma_tma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                               cudaStream_t stream) {
  run<MmaTile::kAuto, 8>(x, w, bn, residual, y, s, stream);
}

}  // namespace ch10::solution
