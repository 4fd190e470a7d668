// v15 (Hopper only) — the launcher: v8's INT8 mma.sync tiles on v14's pipeline where the
// shape allows, v8 elsewhere.
//
// What changes over v8: v14's changes over v7 (TMA, mbarriers, one block per SM walking its
// tiles, an epilogue that overlaps the next tile's copies), and B is read as Bt (N x K), the
// copy v11's prepare step makes once, untimed (as the cuBLASLt reference arranges its B), so
// that B's fragments come from plain ldmatrix like A's and v8's byte permutes go. The kernel:
// hopper/mma_sync_tma_kernel.cuh; this file holds only host code, so it builds everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, K a positive multiple of 16, A 16-byte aligned (v11's rule): the
//     TMA kernel on Bt (arranged inside the call if the prepare step did not run for this B).
//   * any other shape: v8_mma_sync_int8 (documented fallback; the tests cover both paths).
//   * any other GPU: an error. The tests skip this variant there, with the reason.
//
// Run: build/ch05/bin/ch05_bench --op=gemm/i8_i32 --impl=reference,v8_mma_sync_int8,v15_mma_sync_tma_int8
#include "hopper_launch.cuh"

namespace ch05::solution {

CH05_LAUNCHER(v15_mma_sync_tma_int8) {
  static_assert(std::is_same_v<In, int8_t> && std::is_same_v<Out, int32_t>, "INT8 in, INT32 out");
  hopper_or_fallback<hopper::mma_tma_int8_gemm, v8_mma_sync_int8<In, Out>>("v15_mma_sync_tma_int8", M, N, K, A, B, C, D,
                                                                           stream);
}

CH05_INSTANTIATE(v15_mma_sync_tma_int8, int8_t, int32_t);

}  // namespace ch05::solution
