// The Hopper bonus's kernel, built for sm_90a alone (hopper/wgmma_tma_kernel.cu, in its own
// library: see chapters/ch05_wmma/extra.cmake). The ladder's v6 launcher (v6_wgmma_tma.cu)
// decides per call whether this path applies and falls back to v5.
#pragma once
#include <cuda_runtime.h>

#include "ch05.cuh"

namespace ch05::solution::hopper {

// Whether the TMA path can take the problem: TMA needs the row strides (K for A, N for B,
// in bytes) to be multiples of 16 and the bases 16-byte aligned. Any M and N, and any K
// (the last tile is zero-filled by TMA), are fine.
bool supports(int M, int N, int K, const void* A, const void* B);

// D = A * B (+ C) with FP16 or BF16 inputs. Only on compute capability 9.0 and when
// supports() is true.
template <class In, class Out>
void gemm(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream);

}  // namespace ch05::solution::hopper
