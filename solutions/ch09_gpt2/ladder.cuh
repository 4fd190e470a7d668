// Chapter 9's solution ladder: one file per step, each a launcher of ch09.cuh's types.
//
//   v1_naive          one thread per output, a loop over k; the GEMV one thread per row:
//                     right for every shape, the epilogue written once (epilogue.cuh)
//   v2_smem_tiled     (64, 64) output tiles on CUDA cores, (64, 16) tiles of x and of W in
//                     shared memory, 4 x 4 outputs per thread: the FP32 model path's GEMM
//   v3_wmma_epilogue  BF16 tensor cores (WMMA 16x16x16), W [N, K] read as a col_major
//                     matrix_b, the accumulator tile staged in shared memory where the
//                     bias and GELU are applied before the one store: the fused epilogue
//   v4_gemv_warp      one warp per row of W, 16-byte loads, a shuffle sum: the batch-1
//                     GEMV at memory speed
#pragma once
#include "ch09.cuh"

namespace ch09::solution {

template <class T>
void linear_naive(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream);
template <class T>
void gemv_naive(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream);

template <class T>
void linear_tiled(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream);

void linear_wmma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                 cudaStream_t stream);

template <class T>
void gemv_warp(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream);

}  // namespace ch09::solution
