// Step 12 (Hopper only) — the launcher: TMA + wgmma where the shape allows, v8 elsewhere.
//
// The kernel lives in linear/hopper/v12_wgmma_epilogue.cu, built for sm_90a alone in its own
// library (chapters/ch09_gpt2/extra.cmake, workbook_add_hopper_library): wgmma and setmaxnreg
// exist only in the architecture-specific sm_90a target, and the rest of the ladder is built
// for every GPU in the architecture list. This file holds only host code, so it builds
// everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, K a multiple of 8 (TMA needs row strides that are multiples of
//     16 bytes), x and W 16-byte aligned: the wgmma kernel, for any M and N.
//   * any other shape: v8_mma_epilogue (which itself hands K % 8 != 0 to v3); the tests cover
//     both paths.
//   * any other GPU: an error. The tests skip this step there, with the reason; the variant
//     is not even listed when the build has no sm_90a library.
//
// linear_on_hopper holds these checks for both Hopper steps (v13_wgmma_bias_ahead calls it too).
//
// Run: build/ch09/bin/ch09_bench --op=linear_bias/bf16 --impl=v12_wgmma_epilogue,v8_mma_epilogue,cublaslt
#include <stdexcept>
#include <string>

#include "runtime/device.cuh"
#include "ladder.cuh"

#ifdef WB_CH09_HOPPER
#include "hopper/hopper.cuh"
#endif

namespace ch09::solution {

void linear_on_hopper(HopperStep step, const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K,
                      Epilogue epi, cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  const char* name = step == HopperStep::V12 ? "v12_wgmma_epilogue" : "v13_wgmma_bias_ahead";
#ifdef WB_CH09_HOPPER
  static const bool has_wgmma = wb::query_device().has_wgmma();
  if (!has_wgmma) {
    throw std::runtime_error(std::string(name) +
                             " needs sm_90a (Hopper, compute capability 9.0): wgmma and TMA do not exist on this GPU");
  }
  if (hopper::wgmma_supports(M, N, K, x, w)) {
    if (step == HopperStep::V12) {
      hopper::linear_wgmma(x, w, b, y, M, N, K, epi, stream);
    } else {
      hopper::linear_wgmma_bias_ahead(x, w, b, y, M, N, K, epi, stream);
    }
    return;
  }
  linear_mma(x, w, b, y, M, N, K, epi, stream);
#else
  (void)x, (void)w, (void)y, (void)stream;
  throw std::runtime_error(std::string(name) +
                           " is not in this build: it needs nvcc >= 12.0 and sm_90 in CMAKE_CUDA_ARCHITECTURES");
#endif
}

bool linear_on_hopper_available() {
#ifdef WB_CH09_HOPPER
  static const bool has_wgmma = wb::query_device().has_wgmma();
  return has_wgmma;
#else
  return false;
#endif
}

void linear_wgmma_tma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                      cudaStream_t stream) {
  linear_on_hopper(HopperStep::V12, x, w, b, y, M, N, K, epi, stream);
}

}  // namespace ch09::solution
