// v6 (bonus, Hopper only) — the launcher: TMA + wgmma where the shape allows, v5 elsewhere.
//
// The kernel lives in hopper/wgmma_tma_kernel.cu, built for sm_90a alone in its own
// library (chapters/ch05_wmma/extra.cmake): wgmma and setmaxnreg exist only in the
// architecture-specific sm_90a target, and the rest of the ladder is built for every GPU in
// the architecture list. This file holds only host code, so it builds everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, K and N multiples of 8 (TMA needs row strides that are
//     multiples of 16 bytes), 16-byte aligned A and B: the wgmma kernel. Any M, N and K
//     beyond that: TMA fills zeros outside the matrices, the epilogue skips them.
//   * any other shape: v5_mma_sync (documented fallback; the tests cover both paths).
//   * any other GPU: an error. The tests skip this set there, with the reason.
//
// Run: build/ch05/bin/ch05_bench --impl=v6_wgmma_tma,v5_mma_sync,reference
#include "hopper_launch.cuh"

namespace ch05::solution {

CH05_LAUNCHER(v6_wgmma_tma) {
  hopper_or_fallback<hopper::gemm<In, Out>, v5_mma_sync<In, Out>>("v6_wgmma_tma", M, N, K, A, B, C, D, stream);
}

CH05_INSTANTIATE_16BIT(v6_wgmma_tma);

}  // namespace ch05::solution
