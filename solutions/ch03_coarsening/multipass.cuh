// The driver of steps v1 to v3: one element per thread, one partial per block, and the
// same block kernel again on the partials until one value is left.
//
//   pass 1:  n elements        -> ceil(n / 256) partials      (workspace)
//   pass 2:  those partials    -> ceil(n / 256^2) partials    (workspace, after the first)
//   ...                        -> 1 value                      (*out)
//
// 2^27 elements take four passes (524288, 2048, 8, 1); every pass is a launch, and each
// reads what the previous one wrote. Step v4 replaces all of this with a grid sized to the
// GPU and one small second kernel; step v5 with a single kernel.
#pragma once
#include "runtime/errors.cuh"
#include "reduce_common.cuh"

namespace ch03::solution {

// A block kernel: block b reduces x[b * kThreads, (b + 1) * kThreads) into dst[b].
template <class T>
using BlockKernel = void (*)(const T* x, int n, float* dst);

// What every block kernel of v1 to v3 starts with: thread t of block b loads element
// b * kThreads + t (Op's identity past n) into tile[t], then a barrier.
template <class Op, class T>
__device__ __forceinline__ void load_tile(float* tile, const T* x, int n) {
  const int t = threadIdx.x;
  const int64_t i = int64_t{blockIdx.x} * kThreads + t;
  tile[t] = i < n ? to_float(x[i]) : Op::identity();
  __syncthreads();
}

// Floats of workspace the passes need: every pass but the last writes its partials there.
inline size_t multipass_workspace_bytes(int n) {
  int64_t count = n, total = 0;
  while (count > kThreads) {
    count = ceil_div(count, kThreads);
    total += count;
  }
  return static_cast<size_t>(total) * sizeof(float);
}

template <class T>
void multipass(BlockKernel<T> first, BlockKernel<float> next, const T* x, int n, float* out, void* ws, size_t ws_bytes,
               cudaStream_t stream, const char* who) {
  const size_t need = multipass_workspace_bytes(n);
  if (ws_bytes < need) {
    throw std::length_error(std::string(who) + ": the workspace holds " + std::to_string(ws_bytes) + " bytes, " +
                            std::to_string(need) + " are needed");
  }
  float* free_space = static_cast<float*>(ws);
  int blocks = std::max(1, ceil_div(n, kThreads));  // one block also for n = 0: it writes the identity
  float* dst = blocks == 1 ? out : free_space;
  first<<<blocks, kThreads, 0, stream>>>(x, n, dst);
  WB_CHECK_LAUNCH();
  while (blocks > 1) {
    const float* src = dst;
    const int count = blocks;
    free_space += count;
    blocks = ceil_div(count, kThreads);
    dst = blocks == 1 ? out : free_space;
    next<<<blocks, kThreads, 0, stream>>>(src, count, dst);
    WB_CHECK_LAUNCH();
  }
}

// The three entry points of step `step` (v1, v2, v3) whose block kernel template is
// `kernel`: step_sum_f32, step_max_f32 and step_sum_bf16 (ladder.cuh), each the passes of
// multipass with kernel<T, Op> first and kernel<float, Op> on the FP32 partials after it.
#define CH03_MULTIPASS_STEP(step, kernel)                                                                            \
  void step##_sum_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {           \
    multipass<float>(kernel<float, SumOp>, kernel<float, SumOp>, x, n, out, ws, ws_bytes, stream, #step "_sum_f32"); \
  }                                                                                                                  \
  void step##_max_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {           \
    multipass<float>(kernel<float, MaxOp>, kernel<float, MaxOp>, x, n, out, ws, ws_bytes, stream, #step "_max_f32"); \
  }                                                                                                                  \
  void step##_sum_bf16(const __nv_bfloat16* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {  \
    multipass<__nv_bfloat16>(kernel<__nv_bfloat16, SumOp>, kernel<float, SumOp>, x, n, out, ws, ws_bytes, stream,    \
                             #step "_sum_bf16");                                                                     \
  }

}  // namespace ch03::solution
