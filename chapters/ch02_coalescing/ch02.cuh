// Chapter 2 — coalescing: the interface between your kernels and the harness.
//
// You write the launchers declared in namespace ch02::student, one per file:
//   ex1_strided_copy.cu      out[i] = in[i * stride]: what a stride does to bandwidth
//   ex2_transpose_naive.cu   the direct transpose: one thread per element, no shared memory
//   ex3_transpose_tiled.cu   the fast transpose: a shared-memory tile, no bank conflicts, and
//                            as much coarsening and vectorizing as you like
//   ex4_transpose_bf16.cu    the same on 2-byte BF16 elements
// Each launcher receives device pointers and a stream, picks a grid, launches its kernel on
// that stream and checks the launch. Nothing else in the chapter needs to change: spec.cu
// declares how each op is checked and timed, variants.cu lists your launchers.
//
// Matrices are row-major and packed (row stride = number of columns). Pointers come from
// cudaMalloc, so they are at least 256-byte aligned.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace ch02 {

// out[i] = in[i * stride] for 0 <= i < n, with stride >= 1; `in` holds (n - 1) * stride + 1
// floats. stride = 1 is a plain copy.
using StridedCopyFn = void(const float* in, float* out, int n, int stride, cudaStream_t stream);

// out = transpose(in): `in` is rows x cols, `out` is cols x rows, and
//   out[c * rows + r] = in[r * cols + c]   for 0 <= r < rows, 0 <= c < cols.
// rows and cols are any sizes >= 1 (the tests use 1 x 1000, 1025 x 17, 2049 x 1021 ...), and
// rows * cols may pass 2^31 (46344 x 46344), as may (n - 1) * stride: offsets in 64 bits.
using TransposeF32Fn = void(const float* in, float* out, int rows, int cols, cudaStream_t stream);
using TransposeBF16Fn = void(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream);

namespace student {
StridedCopyFn strided_copy;
TransposeF32Fn transpose_naive;
TransposeF32Fn transpose;
TransposeBF16Fn transpose_bf16;
}  // namespace student

}  // namespace ch02
