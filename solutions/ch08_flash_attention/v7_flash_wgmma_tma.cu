// v7 (bonus, Hopper only) — the launcher of the wgmma + TMA attention kernel.
//
// The kernel lives in hopper/flash_wgmma_kernel.cu, built for sm_90a alone in its own library
// (workbook_add_hopper_library, cmake/Workbook.cmake): wgmma and setmaxnreg exist only in the
// architecture-specific sm_90a target, and the rest of the ladder is built for every GPU in the
// architecture list. This file holds only host code, so it builds everywhere. On any GPU but
// compute capability 9.0 the call is an error; the tests skip the variant there, with the
// reason. Every shape attention/bf16 allows runs on the kernel (no fallback): TMA fills zeros
// past S and D, the mask and the epilogue do the rest. The checks and the dispatch to the
// kernel are on_hopper (hopper_launch.cuh), which v8 shares.
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16 --impl=v7_flash_wgmma_tma,v4_flash_mma_sync,cudnn_sdpa
#include "hopper_launch.cuh"
#include "ladder.cuh"

namespace ch08::solution {

void v7_attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                       int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  on_hopper<hopper::attention_bf16>("v7_flash_wgmma_tma", q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, scratch,
                                    stream);
}

}  // namespace ch08::solution
