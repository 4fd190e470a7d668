// The Hopper bonus's attention kernels, built for sm_90a alone (hopper/flash_wgmma_kernel.cu and
// hopper/flash_pingpong_kernel.cu, in their own library: workbook_add_hopper_library in
// cmake/Workbook.cmake). The ladder's v7 and v8 launchers (v7_flash_wgmma_tma.cu,
// v8_flash_wgmma_pingpong.cu) check the GPU and the arguments, then call them.
#pragma once
#include <cuda_runtime.h>

#include "ch08.cuh"

namespace ch08::solution::hopper {

// attention/bf16 (ch08.cuh) on compute capability 9.0: q, k, v, o 16-byte aligned, D a
// multiple of 8 up to 128 (TMA's rows must be multiples of 16 bytes).
void attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                    int D, float scale, bool causal, cudaStream_t stream);

// The same contract, on v8's kernel: v7's with the consumer warpgroups taking turns on the
// tensor cores (hopper/flash_pingpong_kernel.cu).
void attention_pingpong_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq,
                             int Sk, int D, float scale, bool causal, cudaStream_t stream);

}  // namespace ch08::solution::hopper
