// The Hopper bonus's attention kernel, built for sm_90a alone (hopper/flash_wgmma_kernel.cu, in
// its own library: workbook_add_hopper_library in cmake/Workbook.cmake). The ladder's v7
// launcher (v7_flash_wgmma_tma.cu) checks the GPU and the arguments, then calls it.
#pragma once
#include <cuda_runtime.h>

#include "ch08.cuh"

namespace ch08::solution::hopper {

// attention/bf16 (ch08.cuh) on compute capability 9.0: q, k, v, o 16-byte aligned, D a
// multiple of 8 up to 128 (TMA's rows must be multiples of 16 bytes).
void attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                    int D, float scale, bool causal, cudaStream_t stream);

}  // namespace ch08::solution::hopper
