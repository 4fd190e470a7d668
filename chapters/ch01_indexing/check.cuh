// How chapter 1's exercises are checked and timed. Used by the tests, the benchmark and
// the harness self-tests, so a broken kernel meets exactly the checks a learner's does.
#pragma once
#include <functional>
#include <string>

#include "ch01.cuh"
#include "cuda/bench.cuh"
#include "cuda/launch.cuh"
#include "host/rng.h"

namespace ch01 {

// Each check draws fresh inputs from `rng`, poisons the output, runs the launcher once
// and compares every element (sampled when large) with a float64 reference.
wb::Outcome check_vector_add(VectorAddFn* fn, int n, wb::Rng& rng, const std::string& op = "vector_add");
wb::Outcome check_rgb_to_grey(RgbToGreyFn* fn, int height, int width, int pitch, wb::Rng& rng);
wb::Outcome check_matrix_add(MatrixAddFn* fn, int rows, int cols, int ld_pad, wb::Rng& rng);

// For the benchmark: allocate random inputs once and return the launch to time.
using Launch = std::function<void(cudaStream_t)>;
Launch prepare_vector_add(VectorAddFn* fn, int n, uint64_t seed);
Launch prepare_rgb_to_grey(RgbToGreyFn* fn, int height, int width, uint64_t seed);
Launch prepare_matrix_add(MatrixAddFn* fn, int rows, int cols, uint64_t seed);

// The same problems prepared for fair timing (see wb::bench::Timed): next_inputs draws new
// input values on the GPU before every timed launch and poisons the output; check_last
// compares the last timed output with float64. The inputs of timed launches come from the
// seed mixed with fresh entropy, so they cannot be predicted from the seed.
wb::bench::Timed prepare_timed_vector_add(VectorAddFn* fn, int n, uint64_t seed, const std::string& op = "vector_add");
wb::bench::Timed prepare_timed_rgb_to_grey(RgbToGreyFn* fn, int height, int width, uint64_t seed);
wb::bench::Timed prepare_timed_matrix_add(MatrixAddFn* fn, int rows, int cols, uint64_t seed);

}  // namespace ch01
