// v11 (bonus, Hopper only) — the launcher: INT8 wgmma where the shape allows, v8 elsewhere.
//
// The kernel is hopper/v11_wgmma_int8.cu (the 8-bit pipeline of hopper/wgmma_8bit_kernel.cuh),
// built for sm_90a alone; this file holds only host code, so it builds everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, K a positive multiple of 16, A 16-byte aligned: wgmma, on B
//     transposed once by the prepare step (hopper::int8_arrange_b; inside the call if the
//     prepare step did not run for this B). Any M and N.
//   * any other shape: v8_mma_sync_int8 (documented fallback; the tests cover both paths).
//   * any other GPU: an error. The tests skip this variant there, with the reason.
//
// Run: build/all/bin/ch05_bench --op=gemm/i8_i32 --impl=v11_wgmma_int8,v8_mma_sync_int8,reference
#include "hopper_launch.cuh"

namespace ch05::solution {

CH05_LAUNCHER(v11_wgmma_int8) {
  static_assert(std::is_same_v<In, int8_t> && std::is_same_v<Out, int32_t>, "INT8 in, INT32 out");
  hopper_or_fallback<hopper::int8_gemm, v8_mma_sync_int8<In, Out>>("v11_wgmma_int8", M, N, K, A, B, C, D, stream);
}

CH05_INSTANTIATE(v11_wgmma_int8, int8_t, int32_t);

}  // namespace ch05::solution
