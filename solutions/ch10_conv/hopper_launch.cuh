// The launcher that v12, v13 and v14 share: host code only, so it builds everywhere. It checks
// the shape, then runs one of the persistent Hopper kernels of hopper/hopper.cuh where the build
// includes them (WB_CH10_HOPPER), the GPU has wgmma, hopper::supports takes the call and the
// kernel itself does (it returns false, launching nothing, on shapes outside its reach); the
// step before runs everything else.
#pragma once
#include "hopper/hopper.cuh"  // declarations only: the definitions are built where WB_CH10_HOPPER is
#include "ladder.cuh"
#include "runtime/device.cuh"

namespace ch10::solution {

// conv2d_bn_relu/bf16 (ch10.cuh) on kKernel (hopper::conv_bn_relu_persistent, _im2col or
// _mma_im2col) with its trailing arguments fixed to kForm (the tile, the schedule or the consumer
// warps), else on kFallback. kKernel is called only in a build that has it.
template <auto& kKernel, auto& kFallback, auto... kForm>
void hopper_or_fallback(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                        cudaStream_t stream) {
  require_valid(s);
#ifdef WB_CH10_HOPPER
  static const bool hopper = wb::query_device().has_wgmma();
  if (hopper && hopper::supports(s, x, w) && kKernel(x, w, bn, residual, y, s, stream, kForm...)) {
    return;
  }
#endif
  kFallback(x, w, bn, residual, y, s, stream);
}

}  // namespace ch10::solution
