// v17 (bonus, Hopper sm_90a only) — FP8 E4M3 GEMM on wgmma, block scales (1 x 128 of A,
// 128 x 128 of B), on v16's 128 x 192 tiles and TMA-store epilogue (one CTA per tile: v16's
// clusters were measured for the per-tensor form only).
//
// What changes over v13: v16's kernel with v13's promotion, total += part * scale_a[kb][row] *
// scale_b[nb][kb]. A 192-column tile spans one and a half blocks of B: its first 64 columns
// lie in block bn * 192 / 128, its last 64 in the next, its middle 64 in one or the other by
// the parity of bn. So per stage a thread loads four scales (its two rows of A, two of B), forms
// their four products and one select for the middle, and each 8-column chunk of its
// accumulators takes its product without a branch (hopper/wgmma_fp8_wide_kernel.cuh). The
// loads are issued before the stage's wait, as in v10 and v13.
//
// Why it should keep closer to the per-tensor kernel than v13 does to v12: the promotion's
// extra work (an FMA instead of an add, four loads and five multiplies per 128 of K) is the same
// per accumulator, but each consumer now has 50 % more tensor-core work per stage to hide it
// behind. Same sums as v10 and v13: the same error model.
//
// Shapes: any the FP8 op accepts; a D that is not 16-byte aligned runs v13.
//
// Run: build/ch05/bin/ch05_bench --full --op=gemm_fp8_block --shape=8192 \
//        --impl=reference,v13_wgmma_fp8_block_overlap,v17_wgmma_fp8_block_wide
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_fp8_wide_kernel.cuh"

namespace ch05::solution {

void v17_wgmma_fp8_block_wide(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                              const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  hopper::k8w::run<hopper::k8::Epi::Fp8Block, 192>(M, N, K, A, B, scale_a, scale_b, D, stream,
                                                   "v17_wgmma_fp8_block_wide", &v13_wgmma_fp8_block_overlap);
}

}  // namespace ch05::solution
