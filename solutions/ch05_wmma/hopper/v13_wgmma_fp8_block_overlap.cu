// v13 (bonus, Hopper sm_90a only) — FP8 E4M3 GEMM on wgmma, block scales (1 x 128 of A,
// 128 x 128 of B), the promotion overlapped with the next stage's wgmmas.
//
// What changes over v10: v12's schedule (two `part` sets that alternate by stage; stage s + 1's
// wgmmas issued before waiting, with wait_group 1, for stage s's), with v10's promotion:
// total += part * scale_a[kb][row] * scale_b[nb][kb]. The three scale loads of stage s are
// issued before the wait for stage s + 1's data, so their latency hides behind both waits;
// the 64 FMAs per thread then run while stage s + 1's wgmmas do. v10 paid for the loads and
// the FMAs with idle tensor cores, which is why it fell further behind v9 than one FMA per
// accumulator explains.
//
// Run: build/ch05/bin/ch05_bench --full --op=gemm_fp8_block --shape=8192
// --impl=reference,v10_wgmma_fp8_block,v13_wgmma_fp8_block_overlap
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_8bit_kernel.cuh"

namespace ch05::solution {

void v13_wgmma_fp8_block_overlap(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B,
                                 const float* scale_a, const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  using namespace hopper::k8;
  run_fp8<Epi::Fp8Block, Promote::Overlapped>(M, N, K, A, B, scale_a, scale_b, D, stream,
                                              "v13_wgmma_fp8_block_overlap");
}

}  // namespace ch05::solution
