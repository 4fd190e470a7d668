// How chapter 3's exercises are checked and timed. Used by the tests, the benchmark and
// the harness self-tests, so a broken kernel meets exactly the checks a learner's does.
//
// The inputs are built to catch the usual reduction bugs at any length:
//   * sums: values uniform in [-1, 1), and the LAST element (of the array, or of each row)
//     is a large value in +-[16, 32): a kernel that skips the tail is off by more than the
//     tolerance even at 2^24 elements, where one ordinary element would hide in it;
//   * max: every value is negative (a kernel that starts from 0 returns 0), and the max
//     sits where the test puts it: first, last, or at a random position;
//   * past the end of the input lies a guard of 2^100 (about 1.3e30): a kernel that reads
//     beyond x[n-1] and uses the value gets a result near 1e30, and is told why.
#pragma once
#include <functional>
#include <string>

#include "ch03.cuh"
#include "cuda/bench.cuh"
#include "cuda/launch.cuh"
#include "host/rng.h"

namespace ch03 {

enum class Reduction { SumF32, MaxF32, SumBf16 };
const char* reduction_name(Reduction r);     // "sum_f32", "max_f32", "sum_bf16"
bool has(const Kernels& k, Reduction r);      // does this set have a launcher for it?

// Where the max checks put the largest element.
enum class MaxAt { First, Last, Random };

// Each check draws fresh inputs from `rng`, zero-fills a workspace of the size the set
// asks for, then `runs` times: poisons the output, runs the launcher, compares with the
// float64 reference. Every run must pass: the runs share the input and the workspace, so
// a launcher that does not reset its counter, or whose result changes from run to run (a
// race), is caught and told so.
wb::Outcome check_reduce(const Kernels& k, Reduction op, int n, wb::Rng& rng, int runs = 2,
                         MaxAt max_at = MaxAt::Random);
wb::Outcome check_row_sum(const Kernels& k, int rows, int cols, wb::Rng& rng, int runs = 2);

// For the benchmark: allocate random inputs, output and workspace once and return the
// launch to time.
using Launch = std::function<void(cudaStream_t)>;
Launch prepare_reduce(const Kernels& k, Reduction op, int n, uint64_t seed);
Launch prepare_row_sum(const Kernels& k, int rows, int cols, uint64_t seed);

// The same problems prepared for fair timing (see wb::bench::Timed): before every timed
// launch, next_inputs draws new input values on the GPU (from the seed mixed with fresh
// entropy) and poisons the output, leaving the workspace as the launcher left it;
// check_last compares the last timed result with float64. A launcher that remembers its
// last answer instead of reducing is caught.
wb::bench::Timed prepare_timed_reduce(const Kernels& k, Reduction op, int n, uint64_t seed);
wb::bench::Timed prepare_timed_row_sum(const Kernels& k, int rows, int cols, uint64_t seed);

}  // namespace ch03
