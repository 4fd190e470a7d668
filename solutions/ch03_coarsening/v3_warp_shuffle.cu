// v3 — the last five steps of the tree inside one warp, with __shfl_down_sync.
//
// What changes over v2: once 64 values are left, warp 0 takes them (two per lane) and
// finishes with register-to-register shuffles:
//
//   lane:      0   1   2  ...  15  16 ... 31
//   offset 16: v0 += v16, v1 += v17, ... v15 += v31
//   offset 8:  v0 += v8, ...                        (lanes >= offset keep stale values:
//   offset 4, 2, 1                                   only lane 0's result is used)
//
// Why it is faster: a shuffle moves a value between lanes without shared memory, and a warp
// needs no __syncthreads() to agree with itself: 5 of the 8 barriers and 10 shared-memory
// round trips go away. On a memory-bound kernel the gain is small; the lesson is the
// building block: v4 and later reduce each warp with shuffles first and use shared memory
// only to combine the 8 warp totals.
//
// From multipass.cuh: load_tile (the block's elements into shared memory), multipass (the
// passes) and CH03_MULTIPASS_STEP (the step's three entry points, from its block kernel).
//
// Run: build/ch03/bin/ch03_bench --impl=v3_warp_shuffle,v2_sequential
#include "ladder.cuh"
#include "multipass.cuh"

namespace ch03::solution {
namespace {

template <class T, class Op>
__global__ void __launch_bounds__(kThreads) warp_shuffle_kernel(const T* x, int n, float* dst) {
  static_assert((kThreads & (kThreads - 1)) == 0 && kThreads >= 64, "a power-of-two block of two warps or more");
  __shared__ float tile[kThreads];  // (kThreads) one element per thread
  load_tile<Op>(tile, x, n);
  const Op op;
  const int t = threadIdx.x;
  for (int s = kThreads / 2; s > 32; s /= 2) {  // shared memory down to 64 values
    if (t < s) tile[t] = op(tile[t], tile[t + s]);
    __syncthreads();
  }
  if (t < 32) {  // warp 0: 64 values, two per lane, then shuffles
    float v = op(tile[t], tile[t + 32]);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xFFFFFFFFu, v, offset));
    if (t == 0) dst[blockIdx.x] = v;
  }
}

}  // namespace

CH03_MULTIPASS_STEP(v3, warp_shuffle_kernel)

}  // namespace ch03::solution
