// v4 — thread coarsening: a grid sized to the GPU, each thread summing many elements with
// vector loads before the block combines anything.
//
// What changes over v3:
//   * the grid is "resident": SMs x (blocks per SM) blocks, all running at once. Each block
//     walks the array in a grid-stride loop (coarsened.cuh); a thread ends up adding
//     n / (grid x 256) elements in registers, and the tree runs once per block instead of
//     once per 256 elements;
//   * 16-byte float4 loads (8-byte for four BF16): a warp moves 512 bytes per instruction;
//   * F loads issued back to back before the first is used: F x 16 bytes in flight per
//     thread. This is the coarsening factor, the template parameter F, benchmarked as
//     v4_coarsened_x1, _x4 and _x16;
//   * the block reduces each warp with shuffles and combines the 8 warp totals through
//     shared memory: one __syncthreads() instead of eight;
//   * the partials (one per block, about a thousand) are added by one small second
//     kernel: two launches in all, whatever n is.
//
// Why it is faster: a load takes several hundred nanoseconds to come back from DRAM, and
// the memory system delivers its full bandwidth only when bandwidth x latency bytes are in
// flight at once (Little's law; a few MB on an H100/H200, tens of KB per SM). One 4-byte
// load per thread (v1..v3) leaves far less than that in flight; F float4 per thread across
// 2048 threads per SM puts F x 32 KB in flight per SM. Past the point where the memory
// system is saturated, a larger F buys nothing. (Read the compiler's resource report:
// ptxas gives x16 only 32 registers on sm_90, so it cannot hold 16 float4 = 64 registers
// of loads at once; it interleaves loads and adds to keep 2048 threads per SM.)
//
// Run: build/ch03/bin/ch03_bench --impl=v4_coarsened_x1,v4_coarsened_x4,v4_coarsened_x16
#include "coarsened.cuh"
#include "ladder.cuh"

namespace ch03::solution {
namespace {

// dst[blockIdx.x] = this block's share of x[0, n).
template <class T, class Op, int F>
__global__ void __launch_bounds__(kThreads) coarsened_kernel(const T* __restrict__ x, int n, float* __restrict__ dst) {
  float v = coarsened_partial<T, Op, F, kThreads>(x, n, blockIdx.x, gridDim.x);
  v = block_reduce<Op, kThreads>(v);
  if (threadIdx.x == 0) dst[blockIdx.x] = v;
}

// *out = the `count` partials combined (one block).
template <class Op>
__global__ void __launch_bounds__(kThreads)
    finish_kernel(const float* __restrict__ partials, int count, float* __restrict__ out) {
  float v = Op::identity();
  for (int i = threadIdx.x; i < count; i += kThreads) v = Op{}(v, partials[i]);
  v = block_reduce<Op, kThreads>(v);
  if (threadIdx.x == 0) *out = v;
}

template <class T, class Op, int F>
void launch(const T* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream, const char* who) {
  static const int resident = resident_blocks(coarsened_kernel<T, Op, F>, kThreads);
  // No more blocks than there are chunks of work, and at least one (n = 0 writes the identity).
  const int blocks = std::clamp(ceil_div(n / 4, kThreads * F), 1, resident);
  if (blocks == 1) {  // a single block writes the result itself
    coarsened_kernel<T, Op, F><<<1, kThreads, 0, stream>>>(x, n, out);
    WB_CHECK_LAUNCH();
    return;
  }
  const Workspace w = split_workspace(ws, ws_bytes, 0, blocks, who);
  coarsened_kernel<T, Op, F><<<blocks, kThreads, 0, stream>>>(x, n, w.partials);
  WB_CHECK_LAUNCH();
  finish_kernel<Op><<<1, kThreads, 0, stream>>>(w.partials, blocks, out);
  WB_CHECK_LAUNCH();
}

}  // namespace

size_t v4_workspace_bytes(int) { return workspace_bytes_for(0, kMaxBlocks); }

template <int F>
void V4<F>::sum_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  launch<float, SumOp, F>(x, n, out, ws, ws_bytes, stream, "v4_sum_f32");
}

template <int F>
void V4<F>::max_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  launch<float, MaxOp, F>(x, n, out, ws, ws_bytes, stream, "v4_max_f32");
}

template <int F>
void V4<F>::sum_bf16(const __nv_bfloat16* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  launch<__nv_bfloat16, SumOp, F>(x, n, out, ws, ws_bytes, stream, "v4_sum_bf16");
}

// The coarsening factors the benchmark compares.
template struct V4<1>;
template struct V4<4>;
template struct V4<16>;

}  // namespace ch03::solution
