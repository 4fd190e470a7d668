// Chapter 1 — thread indexing: the interface between your kernels and the harness.
//
// You write the functions declared in namespace ch01::student, one per file:
//   ex0_host_program.cu   a whole program's GPU part, from host arrays to host arrays
//   ex1_vector_add.cu     ex2_vector_add_x2.cu     ex3_rgb_to_grey.cu     ex4_matrix_add.cu
// Exercises 1 to 4 are launchers: each receives device pointers and a stream, picks a grid,
// launches its kernel on that stream and checks the launch. Nothing else in the chapter needs to change: spec.cu
// declares how each op is checked and timed, variants.cu lists your launchers.
//
// All data is FP32 and row-major. Pointers come from cudaMalloc (256-byte aligned).
#pragma once
#include <cuda_runtime.h>

namespace ch01 {

// ex0: c[i] = a[i] + b[i] on HOST arrays of n floats: allocate device memory, copy a and b
// to it, launch a kernel, check the launch, copy c back, free the device memory. When it
// returns, host_c holds the result and no device memory is left allocated.
using VectorAddProgramFn = void(const float* host_a, const float* host_b, float* host_c, int n);

// c[i] = a[i] + b[i] for 0 <= i < n.                                     (ex1: one element per thread)
//                                                                        (ex2: elements 2t and 2t+1 per thread t)
using VectorAddFn = void(const float* a, const float* b, float* c, int n, cudaStream_t stream);

// Planar RGB to grey. `rgb` holds three planes, red then green then blue, each `height`
// rows of `pitch` floats of which the first `width` are pixels (pitch >= width).
//   grey[y * pitch + x] = 0.299 * R[y][x] + 0.587 * G[y][x] + 0.114 * B[y][x]
// for 0 <= y < height, 0 <= x < width; the padding columns of `grey` are left alone.
using RgbToGreyFn = void(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t stream);

// C = A + B for rows x cols matrices with leading dimensions (row strides) lda, ldb, ldc
// >= cols. Use a 2-D grid. Only the rows x cols elements of C are written, never its padding.
using MatrixAddFn = void(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols,
                         cudaStream_t stream);

// The grey weights (ITU-R BT.601 luma).
inline constexpr float kRedWeight = 0.299f, kGreenWeight = 0.587f, kBlueWeight = 0.114f;

namespace student {
VectorAddProgramFn vector_add_program;
VectorAddFn vector_add;
VectorAddFn vector_add_x2;
RgbToGreyFn rgb_to_grey;
MatrixAddFn matrix_add;
}  // namespace student

}  // namespace ch01
