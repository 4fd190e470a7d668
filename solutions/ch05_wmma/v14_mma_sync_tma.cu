// v14 (Hopper only) — the launcher: v7's mma.sync tiles fed by TMA where the shape allows, v7
// elsewhere.
//
// What changes over v7 (the instruction that multiplies stays mma.sync, the warp tile 64 x 64):
// the stages are filled by TMA, handed over by mbarriers instead of __syncthreads(), and one
// block per SM walks its output tiles, so the next tile's copies and this tile's epilogue
// overlap. The kernel, and why each change: hopper/mma_sync_tma_kernel.cuh (built for sm_90a
// alone, in the chapter's Hopper library); this file holds only host code, so it builds
// everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, K > 0, K and N multiples of 8, A and B 16-byte aligned (TMA's
//     rule, as for v6): the TMA kernel. Any M and N beyond that: TMA fills zeros outside A
//     and B, the epilogue skips what lies outside D.
//   * any other shape: v7_mma_sync_k64 (documented fallback; the tests cover both paths).
//   * any other GPU: an error. The tests skip this set there, with the reason.
//
// Run: build/ch05/bin/ch05_bench --impl=reference,v7_mma_sync_k64,v14_mma_sync_tma
#include "hopper_launch.cuh"

namespace ch05::solution {

CH05_LAUNCHER(v14_mma_sync_tma) {
  hopper_or_fallback<hopper::mma_tma_gemm<In, Out>, v7_mma_sync_k64<In, Out>, true>("v14_mma_sync_tma", M, N, K, A, B,
                                                                                    C, D, stream);
}

CH05_INSTANTIATE_16BIT(v14_mma_sync_tma);

}  // namespace ch05::solution
