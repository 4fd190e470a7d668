// v16 (bonus, Hopper sm_90a only) — v13 (FP8 E4M3, block scales, the scaled promotion overlapped
// with the next stage's wgmmas) with v15's TMA-store epilogue.
//
// What changes over v13: the epilogue, exactly as from v12 to v15 (the tile rounded to BF16 into
// shared memory with stmatrix, two TMA store boxes per consumer warpgroup instead of 4-byte
// stores from the registers). The block scales are applied at each promotion, as in v13, so the
// epilogue multiplies by nothing. Same sums, same order, same results as v13.
//
// Run: build/ch05/bin/ch05_bench --full --op=gemm_fp8_block --shape=8192
//      --impl=reference,v13_wgmma_fp8_block_overlap,v16_wgmma_fp8_block_tma_store
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_8bit_kernel.cuh"

namespace ch05::solution {

void v16_wgmma_fp8_block_tma_store(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B,
                                   const float* scale_a, const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  using namespace hopper::k8;
  run_fp8<Epi::Fp8Block, Promote::Overlapped, true>(M, N, K, A, B, scale_a, scale_b, D, stream,
                                                    "v16_wgmma_fp8_block_tma_store");
}

}  // namespace ch05::solution
