// v8 (bonus, Hopper only) — the launcher of v7's kernel with FlashAttention-3's scheduling
// (ping-pong between the consumer warpgroups, softmax overlapped with the last P V).
//
// The kernel lives in hopper/flash_pingpong_kernel.cu (its header says what changed over v7
// and why), built for sm_90a alone like v7's. This file holds only host code, so it builds
// everywhere; on any GPU but compute capability 9.0 the call is an error and the tests skip
// the variant, with the reason. Every shape attention/bf16 allows runs on the kernel, with
// v7's edge and mask handling. From v7, unchanged: the checks and the dispatch to the kernel
// (on_hopper, hopper_launch.cuh).
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16
// --impl=v7_flash_wgmma_tma,v8_flash_wgmma_pingpong,cudnn_sdpa
#include "hopper_launch.cuh"
#include "ladder.cuh"

namespace ch08::solution {

void v8_attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                       int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  on_hopper<hopper::attention_pingpong_bf16>("v8_flash_wgmma_pingpong", q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal,
                                             scratch, stream);
}

}  // namespace ch08::solution
