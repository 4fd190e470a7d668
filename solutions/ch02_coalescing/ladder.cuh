// The chapter 2 solution ladder: one file per step, each declaring its launchers here.
// Every transpose is one kernel template on the element type, launched for FP32 and BF16.
#pragma once
#include "ch02.cuh"
#include "device/math.cuh"

namespace ch02::solution {

// v1_naive.cu — one thread per element. The transpose reads rows (coalesced) and writes
// columns (a warp's 32 stores land in 32 different rows: uncoalesced).
StridedCopyFn v1_strided_copy;
TransposeF32Fn v1_transpose_f32;
TransposeBF16Fn v1_transpose_bf16;

// v2_smem_tiled.cu — a 32 x 32 tile in shared memory: both global sides coalesced, but the
// column read of the tile hits one shared-memory bank 32 times (FP32).
TransposeF32Fn v2_transpose_f32;
TransposeBF16Fn v2_transpose_bf16;

// v3_padded.cu — the same tile with one spare 4-byte word per row: no bank conflicts.
TransposeF32Fn v3_transpose_f32;
TransposeBF16Fn v3_transpose_bf16;

// v4_vectorized.cu — 16 elements per thread, 4-wide vector loads and stores, a swizzled tile;
// a coarsened scalar kernel for shapes and pointers the vectors cannot take. Also the
// vectorized copy (stride 1) and a coarsened strided copy.
StridedCopyFn v4_strided_copy;
TransposeF32Fn v4_transpose_f32;
TransposeBF16Fn v4_transpose_bf16;

using wb::ceil_div;  // grids: harness/device/math.cuh

// The two transposes of step `step` (v1 ... v4), step_transpose_f32 and step_transpose_bf16,
// each one call of the step's launcher template: launch(in, out, rows, cols, stream).
#define CH02_TRANSPOSE_STEP(step, launch)                                                                            \
  void step##_transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {                  \
    launch(in, out, rows, cols, stream);                                                                             \
  }                                                                                                                  \
  void step##_transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream) { \
    launch(in, out, rows, cols, stream);                                                                             \
  }

}  // namespace ch02::solution
