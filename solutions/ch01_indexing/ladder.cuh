// The chapter 1 solution ladder: one file per step, each declaring its launchers here.
#pragma once
#include "ch01.cuh"

namespace ch01::solution {

// v0_host_program.cu — exercise 0: the whole program, host arrays in and out.
VectorAddProgramFn v0_vector_add_program;

// v1_one_per_thread.cu — the plain answer to each exercise.
VectorAddFn v1_vector_add;
RgbToGreyFn v1_rgb_to_grey;
MatrixAddFn v1_matrix_add;

// v2_two_per_thread.cu — exercise 2: two adjacent elements per thread.
VectorAddFn v2_vector_add_x2;

// v3_vectorized.cu — 16-byte loads and stores, a grid sized to the GPU, several
// elements per thread: the version that reaches the copy bandwidth.
VectorAddFn v3_vector_add;
RgbToGreyFn v3_rgb_to_grey;
MatrixAddFn v3_matrix_add;

}  // namespace ch01::solution
