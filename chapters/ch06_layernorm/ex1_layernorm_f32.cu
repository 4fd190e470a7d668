// Exercise 1 — LayerNorm forward in FP32.
//
// Goal: for every row n of x (C floats, rows ld apart), write
//   mean[n] = (1/C) sum x,   rstd[n] = 1/sqrt((1/C) sum (x - mean)^2 + eps),
//   y[c]    = (x[c] - mean) * rstd * gamma[c] + beta[c]           (only the first C of a row)
// for ANY N and C (C = 1, 3, 127, 769, 12288 ...), also on rows whose mean is 1000 and
// whose spread is 1: take the mean FIRST, then the sum of squared differences. A block per
// row is the natural start: every thread adds a strided share of the row, the block adds
// the shares (the tree of chapter 3), and every thread needs the result (broadcast it
// through shared memory).
// Test:  ctest --preset ch06 -R ex1_layernorm_f32
// Bench: build/ch06/bin/ch06_bench
// Guide: docs/ch06-layernorm.md, section "Exercise 1".
#include "ch06.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch06 {
namespace {

constexpr int kThreads = 256;

// One block per row: blockIdx.x is the row.
__global__ void layernorm_f32_kernel(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                     float* rstd, int N, int C, int ld, float eps) {
  // TODO: const float* row = x + (size_t)blockIdx.x * ld;  (size_t: N * ld can pass 2^31)
  // TODO: pass 1: each thread adds row[c] for c = threadIdx.x, threadIdx.x + kThreads, ...
  //       then the block adds the partial sums; every thread reads the mean (shared memory).
  // TODO: pass 2: the same for (row[c] - mean)^2; var = total / C; rstd = rsqrtf(var + eps).
  //       (A __syncthreads() between the two reductions if they share a shared array.)
  // TODO: pass 3: y[c] = (row[c] - mean) * rstd * gamma[c] + beta[c] for c < C only.
  // TODO: thread 0 writes mean[blockIdx.x] and rstd[blockIdx.x].
}

}  // namespace

void student::layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                            float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch06_layernorm/ex1_layernorm_f32.cu");  // delete this line when you start

  if (N == 0) return;   // nothing to do: a grid of zero blocks is a launch error
  const int blocks = 1;  // TODO: one block per row
  layernorm_f32_kernel<<<blocks, kThreads, 0, stream>>>(x, gamma, beta, y, mean, rstd, N, C, ld, eps);
  WB_CHECK_LAUNCH();
}

}  // namespace ch06
