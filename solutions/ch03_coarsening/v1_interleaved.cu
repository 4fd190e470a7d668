// v1 — the textbook tree: one element per thread, pairs combined in shared memory with
// interleaved addressing.
//
// Each block loads 256 elements into shared memory, then halves them log2(256) = 8 times:
// at step s, thread t (with t a multiple of 2s) adds tile[t + s] into tile[t].
//
//   tile:   0  1  2  3  4  5  6  7      step s=1: threads 0,2,4,6 work
//           \_/   \_/   \_/   \_/       step s=2: threads 0,4
//            0     2     4     6        step s=4: thread 0
//             \___/       \___/
//               0           4
//                \_________/
//                     0
//
// Why it is slow: `t % (2 * s) == 0` picks threads scattered over every warp, so for the
// first five steps all 8 warps execute while half, then 3/4, ... 31/32 of their lanes idle
// (divergence); the stride-2s accesses to shared memory collide in its banks; the modulo
// is an expensive integer operation; and one element per thread means one 4-byte load in
// flight per thread, far too few bytes to cover DRAM latency. Every pass is also a launch
// (multipass.cuh), four for 2^27 elements.
//
// From multipass.cuh: load_tile (the block's elements into shared memory), multipass (the
// passes) and CH03_MULTIPASS_STEP (the step's three entry points, from its block kernel).
//
// Run: build/ch03/bin/ch03_bench --impl=v1_interleaved,reference
#include "ladder.cuh"
#include "multipass.cuh"

namespace ch03::solution {
namespace {

template <class T, class Op>
__global__ void __launch_bounds__(kThreads) interleaved_kernel(const T* x, int n, float* dst) {
  __shared__ float tile[kThreads];  // (kThreads) one element per thread
  load_tile<Op>(tile, x, n);
  const Op op;
  const int t = threadIdx.x;
  for (int s = 1; s < kThreads; s *= 2) {
    if (t % (2 * s) == 0) tile[t] = op(tile[t], tile[t + s]);
    __syncthreads();
  }
  if (t == 0) dst[blockIdx.x] = tile[0];
}

}  // namespace

size_t v1_workspace_bytes(int n) { return multipass_workspace_bytes(n); }

CH03_MULTIPASS_STEP(v1, interleaved_kernel)

}  // namespace ch03::solution
