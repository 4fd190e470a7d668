// v2 — sequential addressing: the same tree, with the active threads packed together.
//
// What changes over v1: at each step the FIRST s threads work, and thread t combines
// tile[t] with tile[t + s] (the upper half folds onto the lower half):
//
//   tile:   0  1  2  3  4  5  6  7      step s=4: threads 0..3 add tile[4..7]
//           |  |  |  |__|__|__|__|
//           0  1  2  3                  step s=2: threads 0..1 add tile[2..3]
//           |  |__|__|
//           0  1                        step s=1: thread 0 adds tile[1]
//           |__|
//           0
//
// Why it is faster: the working threads are contiguous, so whole warps either work or sit
// the step out (no divergence inside a warp until fewer than 32 remain), there is no
// modulo, and consecutive threads touch consecutive words of shared memory (no bank
// conflicts). It is still one 4-byte load per thread and one launch per pass: the memory
// system, not the tree, is now what holds it back.
//
// From multipass.cuh: load_tile (the block's elements into shared memory), multipass (the
// passes) and CH03_MULTIPASS_STEP (the step's three entry points, from its block kernel).
//
// Run: build/ch03/bin/ch03_bench --impl=v2_sequential,v1_interleaved
#include "ladder.cuh"
#include "multipass.cuh"

namespace ch03::solution {
namespace {

template <class T, class Op>
__global__ void __launch_bounds__(kThreads) sequential_kernel(const T* x, int n, float* dst) {
  static_assert((kThreads & (kThreads - 1)) == 0, "the tree halves: a power-of-two block");
  __shared__ float tile[kThreads];  // (kThreads) one element per thread
  load_tile<Op>(tile, x, n);
  const Op op;
  const int t = threadIdx.x;
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] = op(tile[t], tile[t + s]);
    __syncthreads();
  }
  if (t == 0) dst[blockIdx.x] = tile[0];
}

}  // namespace

CH03_MULTIPASS_STEP(v2, sequential_kernel)

}  // namespace ch03::solution
