// The launcher that the Hopper steps v6, v11, v14 and v15 share: host code only, so it builds
// everywhere. An empty D does nothing. Where the build includes the Hopper kernels
// (WB_CH05_HOPPER), a GPU without wgmma is an error, and kKernel runs where the shape meets the
// TMA rule (INT8: hopper::int8_supports; FP16 and BF16: hopper::supports, and K > 0 where
// kPositiveK). Everything else runs kFallback, the step's documented fallback.
#pragma once
#include <type_traits>

#include "hopper/hopper.cuh"  // declarations only: the definitions are built where WB_CH05_HOPPER is
#include "ladder.cuh"

namespace ch05::solution {

template <auto& kKernel, auto& kFallback, bool kPositiveK = false, class In, class Out>
void hopper_or_fallback(const char* step, int M, int N, int K, const In* A, const In* B, const Out* C, Out* D,
                        cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
#ifdef WB_CH05_HOPPER
  hopper::require_wgmma(step);
  bool fits;
  if constexpr (std::is_same_v<In, int8_t>) {
    fits = hopper::int8_supports(M, N, K, A);
  } else {
    fits = (!kPositiveK || K > 0) && hopper::supports(M, N, K, A, B);
  }
  if (fits) {
    kKernel(M, N, K, A, B, C, D, stream);
    return;
  }
#endif
  kFallback(M, N, K, A, B, C, D, stream);
}

}  // namespace ch05::solution
