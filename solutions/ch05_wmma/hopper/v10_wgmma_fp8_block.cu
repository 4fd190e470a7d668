// v10 (bonus, Hopper sm_90a only) — FP8 E4M3 GEMM on wgmma, block scales (1 x 128 of A,
// 128 x 128 of B, the layouts of ch05.cuh).
//
// What changes over v9: one line of the promotion. The tensor core's partial sum over a block
// of 128 along K is already what a block scale applies to, so instead of total += part, each
// thread adds part * scale_a[kb][row] * scale_b[column block][kb] (one FMA per accumulator;
// the two rows a thread holds have one scale each, and a 128-column tile has exactly one B
// block). The scales of the next block are loaded before waiting for its data, so their
// latency hides behind the wait. Nothing is left for the epilogue but the BF16 rounding.
//
// Why it should stay close to v9 (target: 0.8x of it or better): the extra work is three
// scale loads and 64 FMAs instead of 64 adds per thread per 128 of K.
//
// Run: build/all/bin/ch05_bench --op=gemm_fp8_block/e4m3_bf16 --impl=v10_wgmma_fp8_block,reference
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_8bit_kernel.cuh"

namespace ch05::solution {

static_assert(hopper::k8::Cfg<hopper::k8::Epi::Fp8Block>::kBN == kFp8ScaleBlock,
              "a block tile spans exactly one block of B's scales");

void v10_wgmma_fp8_block(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                         const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  hopper::k8::run_fp8<hopper::k8::Epi::Fp8Block>(M, N, K, A, B, scale_a, scale_b, D, stream, "v10_wgmma_fp8_block");
}

}  // namespace ch05::solution
