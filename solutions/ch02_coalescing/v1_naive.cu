// v1 — one thread per element: the plain answer to exercises 1 and 2.
//
// Strided copy: thread i reads in[i * stride] and writes out[i]. The writes are coalesced;
// the reads are too only when stride = 1. At stride s a warp's 32 reads are spread over
// 32 * s floats, so each 32-byte sector fetched carries 32 / (4 s) useful bytes (stride 2:
// half; stride >= 8: one float in eight). The benchmark's GB/s falls with it.
//
// Transpose: threadIdx.x follows the input's columns, so the warp's 32 reads are 32
// neighbouring elements of one row — one coalesced 128-byte access (FP32). Its 32 writes go
// to out[c * rows + r] for 32 consecutive c: 32 different rows of `out`, `rows` elements
// apart, so each store instruction touches 32 sectors and fills 4 bytes of each. The L2
// cache merges some of those partial sectors before they reach DRAM, but the load/store
// unit and L2 still handle 8x the sectors of a coalesced write: that is why it is slow.
//
// From ladder.cuh: CH02_TRANSPOSE_STEP (the f32 and bf16 entry points of the launcher).
//
// Run: cmake --workflow --preset ch02-solution   (tests)
//      build/ch02/bin/ch02_bench --impl=v1_naive,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch02::solution {
namespace {

constexpr int kThreads = 256;

__global__ void strided_copy_kernel(const float* __restrict__ in, float* __restrict__ out, int n, int stride) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[static_cast<size_t>(i) * stride];  // i * stride can pass 2^31
}

template <class T>
__global__ void transpose_naive_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;  // input column: x, so a warp reads along a row
  const int r = blockIdx.y * blockDim.y + threadIdx.y;  // input row
  if (r >= rows || c >= cols) return;
  out[static_cast<size_t>(c) * rows + r] = in[static_cast<size_t>(r) * cols + c];
}

template <class T>
void transpose_naive(const T* in, T* out, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 block(32, 8);
  const dim3 grid(ceil_div(cols, block.x), ceil_div(rows, block.y));  // grid.y <= 65535: rows < 524288
  transpose_naive_kernel<T><<<grid, block, 0, stream>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace

void v1_strided_copy(const float* in, float* out, int n, int stride, cudaStream_t stream) {
  if (n == 0) return;
  strided_copy_kernel<<<ceil_div(n, kThreads), kThreads, 0, stream>>>(in, out, n, stride);
  WB_CHECK_LAUNCH();
}

CH02_TRANSPOSE_STEP(v1, transpose_naive)

}  // namespace ch02::solution
