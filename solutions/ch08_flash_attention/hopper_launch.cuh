// The launcher v7 and v8 share (v8 takes it from v7 unchanged): host code only, so it builds
// everywhere. It checks the arguments, then runs one of the Hopper kernels of hopper/hopper.cuh
// when the build includes them (WB_CH08_HOPPER) and the GPU is compute capability 9.0; on any
// other GPU the call is an error, and the tests skip the variant there, with the reason.
#pragma once
#include <stdexcept>
#include <string>

#include "attention_common.cuh"
#include "hopper/hopper.cuh"
#include "runtime/device.cuh"

namespace ch08::solution {

// attention/bf16 (ch08.cuh) on kKernel (hopper::attention_bf16 or attention_pingpong_bf16);
// `who` names the step in the messages. kKernel is called only in a build that has it.
template <auto& kKernel>
void on_hopper(const char* who, const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq,
               int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;  // neither kernel needs any
  check_args(who, B, H, Sq, Sk, D);
  check_aligned(who, q, k, v, o);
#ifdef WB_CH08_HOPPER
  static const bool hopper = wb::query_device().has_wgmma();
  if (hopper) {
    kKernel(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
    return;
  }
#endif
  (void)lse;
  (void)stream;
  throw std::runtime_error(std::string(who) +
                           " needs sm_90a (Hopper, compute capability 9.0) and a build that "
                           "includes it (sm_90 in CMAKE_CUDA_ARCHITECTURES): wgmma and TMA do not exist elsewhere");
}

}  // namespace ch08::solution
