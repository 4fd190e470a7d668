// How chapter 2's exercises are checked and timed. Used by the tests, the benchmark and
// the harness self-tests, so a broken kernel meets exactly the checks a learner's does.
#pragma once
#include <functional>
#include <string>

#include "ch02.cuh"
#include "cuda/bench.cuh"
#include "cuda/launch.cuh"
#include "host/rng.h"

namespace ch02 {

// Each check draws fresh random inputs from `rng`, poisons the output (and a guard zone
// just past its end), runs the launcher once and compares every element (sampled when
// large) with the input it must equal. Copies and transposes move bits without arithmetic,
// so the tolerance is zero: a result is either exactly right or wrong.
wb::Outcome check_strided_copy(StridedCopyFn* fn, int n, int stride, wb::Rng& rng);
wb::Outcome check_transpose_f32(TransposeF32Fn* fn, int rows, int cols, wb::Rng& rng);
wb::Outcome check_transpose_bf16(TransposeBF16Fn* fn, int rows, int cols, wb::Rng& rng);

// For the benchmark: allocate random inputs once and return the launch to time.
using Launch = std::function<void(cudaStream_t)>;
Launch prepare_strided_copy(StridedCopyFn* fn, int n, int stride, uint64_t seed);
Launch prepare_transpose_f32(TransposeF32Fn* fn, int rows, int cols, uint64_t seed);
Launch prepare_transpose_bf16(TransposeBF16Fn* fn, int rows, int cols, uint64_t seed);

// The same problems prepared for fair timing (see wb::bench::Timed): next_inputs draws new
// input values on the GPU before every timed launch and poisons the output; check_last
// compares the last timed output with its input, exactly. The inputs of timed launches come
// from the seed mixed with fresh entropy, so they cannot be predicted from the seed.
wb::bench::Timed prepare_timed_strided_copy(StridedCopyFn* fn, int n, int stride, uint64_t seed);
wb::bench::Timed prepare_timed_transpose_f32(TransposeF32Fn* fn, int rows, int cols, uint64_t seed);
wb::bench::Timed prepare_timed_transpose_bf16(TransposeBF16Fn* fn, int rows, int cols, uint64_t seed);

// Elements the strided copy reads: (n - 1) * stride + 1.
size_t strided_input_size(int n, int stride);

}  // namespace ch02
