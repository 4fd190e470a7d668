// v8 (bonus, Hopper only) — the launcher of v7's kernel with FlashAttention-3's scheduling
// (ping-pong between the consumer warpgroups, softmax overlapped with the last P V).
//
// The kernel lives in hopper/flash_pingpong_kernel.cu (its header says what changed over v7
// and why), built for sm_90a alone like v7's. This file holds only host code, so it builds
// everywhere; on any GPU but compute capability 9.0 the call is an error and the tests skip
// the variant, with the reason. Every shape attention/bf16 allows runs on the kernel, with
// v7's edge and mask handling.
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16
// --impl=v7_flash_wgmma_tma,v8_flash_wgmma_pingpong,cudnn_sdpa
#include <stdexcept>

#include "attention_common.cuh"
#include "runtime/device.cuh"
#include "ladder.cuh"

#ifdef WB_CH08_HOPPER
#include "hopper/hopper.cuh"
#endif

namespace ch08::solution {

void v8_attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                       int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_args("v8_flash_wgmma_pingpong", B, H, Sq, Sk, D);
  check_aligned("v8_flash_wgmma_pingpong", q, k, v, o);
#ifdef WB_CH08_HOPPER
  static const bool hopper = wb::query_device().has_wgmma();
  if (hopper) {
    hopper::attention_pingpong_bf16(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
    return;
  }
#endif
  (void)lse;
  (void)stream;
  throw std::runtime_error(
      "v8_flash_wgmma_pingpong needs sm_90a (Hopper, compute capability 9.0) and a build that "
      "includes it (sm_90 in CMAKE_CUDA_ARCHITECTURES): wgmma and TMA do not exist elsewhere");
}

}  // namespace ch08::solution
