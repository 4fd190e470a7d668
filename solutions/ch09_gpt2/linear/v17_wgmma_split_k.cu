// Step 17 (Hopper only) — the launcher of v17's kernel (linear/hopper/v17_wgmma_split_k.cu),
// with v12's checks and fallbacks (linear_on_hopper, linear/v12_wgmma_epilogue.cu): the
// wgmma kernel on compute capability 9.0 where K % 8 == 0 and x, W are 16-byte aligned, v8
// elsewhere, an error on other GPUs (the tests skip the step there, with the reason).
//
// Run: build/ch09/bin/ch09_bench --full --op=linear_bias/bf16 --impl=v17_wgmma_split_k,v13_wgmma_bias_ahead,reference
#include "ladder.cuh"

namespace ch09::solution {

void linear_wgmma_split_k(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                          cudaStream_t stream) {
  linear_on_hopper(HopperStep::V17, x, w, b, y, M, N, K, epi, stream);
}

}  // namespace ch09::solution
