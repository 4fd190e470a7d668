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
// From multipass.cuh: load_tile (the block's elements into shared memory) and multipass
// (the passes).
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

void v2_sum_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  multipass<float>(sequential_kernel<float, SumOp>, sequential_kernel<float, SumOp>, x, n, out, ws, ws_bytes, stream,
                   "v2_sum_f32");
}

void v2_max_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  multipass<float>(sequential_kernel<float, MaxOp>, sequential_kernel<float, MaxOp>, x, n, out, ws, ws_bytes, stream,
                   "v2_max_f32");
}

void v2_sum_bf16(const __nv_bfloat16* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  multipass<__nv_bfloat16>(sequential_kernel<__nv_bfloat16, SumOp>, sequential_kernel<float, SumOp>, x, n, out, ws,
                           ws_bytes, stream, "v2_sum_bf16");
}

}  // namespace ch03::solution
