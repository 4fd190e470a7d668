// v16 (bonus, Hopper sm_90a only) — FP8 E4M3 GEMM on wgmma, per-tensor scales, 128 x 192 tiles,
// a TMA-store epilogue, and clusters of two CTAs that share B's box.
//
// What changes over v12:
//   * The tile. v12's consumers each multiply 64 x 128 with m64n128k32, so every 2 KB of A a
//     wgmma reads from shared memory serves 128 columns, and a 128 x 128 tile needs 32 KB of
//     copies per 2.1 M multiply-adds. v16's consumers own 64 x 192 (m64n192k32): about 11 %
//     fewer shared-memory bytes per multiply-add for the tensor cores, 17 % fewer for the
//     copies and from L2, and 8192 columns make 43 tile columns (20.85 rounds of 132 CTAs at
//     8192^3, where 128-column tiles leave a last round of 4 tiles). The promotion's two
//     register sets (total and part, 96 each) are what fits; v12's third set does not, so a
//     consumer waits for its stage before promoting (as v9) and the other consumer's wgmmas
//     fill the gap.
//   * The next tile's first stage is issued before the stores, and the stores go through
//     shared memory and TMA (v6's epilogue).
//   * Clusters of two CTAs on neighbouring block rows of one block column: each loads half of
//     the B box they share and the copy engine writes it into both (TMA multicast), so B's
//     bytes leave L2 once per pair; a stage is refilled once the consumers of both CTAs have
//     released it (each consumer warp arrives on both CTAs' barrier).
// Promotion every 128 of K, as v9 and v12: the same sums, the same error model.
//
// Shapes: any the FP8 op accepts (ch05.cuh: N and K multiples of 16); TMA fills zeros past M,
// N and K and the stores clip at D's edges (an odd last block row gets a partner CTA past M,
// which loads zeros and stores nothing). A D that is not 16-byte aligned (TMA stores need it)
// runs v12.
//
// The kernel, and why each piece: hopper/wgmma_fp8_wide_kernel.cuh.
//
// Run: build/ch05/bin/ch05_bench --full --op=gemm_fp8 --shape=8192 \
//        --impl=reference,v12_wgmma_fp8_overlap,v16_wgmma_fp8_wide
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_fp8_wide_kernel.cuh"

namespace ch05::solution {

void v16_wgmma_fp8_wide(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                        const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  hopper::k8w::run<hopper::k8::Epi::Fp8Tensor, 192, 2>(M, N, K, A, B, scale_a, scale_b, D, stream, "v16_wgmma_fp8_wide",
                                                       &v12_wgmma_fp8_overlap);
}

}  // namespace ch05::solution
