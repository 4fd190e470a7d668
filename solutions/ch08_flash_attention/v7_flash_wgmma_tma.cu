// v7 (bonus, Hopper only) — the launcher of the wgmma + TMA attention kernel.
//
// The kernel lives in hopper/flash_wgmma_kernel.cu, built for sm_90a alone in its own library
// (workbook_add_hopper_library, cmake/Workbook.cmake): wgmma and setmaxnreg exist only in the
// architecture-specific sm_90a target, and the rest of the ladder is built for every GPU in the
// architecture list. This file holds only host code, so it builds everywhere. On any GPU but
// compute capability 9.0 the call is an error; the tests skip the variant there, with the
// reason. Every shape attention/bf16 allows runs on the kernel (no fallback): TMA fills zeros
// past S and D, the mask and the epilogue do the rest.
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=bf16 --impl=v7_flash_wgmma_tma,v4_flash_mma_sync,cudnn_sdpa
#include <stdexcept>

#include "attention_common.cuh"
#include "runtime/device.cuh"
#include "ladder.cuh"

#ifdef WB_CH08_HOPPER
#include "hopper/hopper.cuh"
#endif

namespace ch08::solution {

void v7_attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                       int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_args("v7_flash_wgmma_tma", B, H, Sq, Sk, D);
  check_aligned("v7_flash_wgmma_tma", q, k, v, o);
#ifdef WB_CH08_HOPPER
  static const bool hopper = wb::query_device().has_wgmma();
  if (hopper) {
    hopper::attention_bf16(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
    return;
  }
#endif
  (void)lse;
  (void)stream;
  throw std::runtime_error(
      "v7_flash_wgmma_tma needs sm_90a (Hopper, compute capability 9.0) and a build that "
      "includes it (sm_90 in CMAKE_CUDA_ARCHITECTURES): wgmma and TMA do not exist elsewhere");
}

}  // namespace ch08::solution
