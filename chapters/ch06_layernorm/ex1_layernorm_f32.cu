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
//
// What the tests check, and the outcome code a failure gets:
//   * y, mean and rstd within tolerances that grow with sqrt(C) and with the row's |mean| /
//     std [wrong], also on rows of mean 1000 and of mean -1e4 (std 1), where a one-pass
//     variance E[x^2] - E[x]^2 fails; NaN never passes [nan].
//   * every y[n][c] (c < C), mean[n] and rstd[n] written [unwritten]; y's padding [C, ld)
//     left untouched [wrote_padding]; nothing outside the outputs [oob_write].
//   * C = 1, 3, 127, 768, 769, 1000 ... 12288 with N = 1, 33, 1000, 16384, and random shapes;
//     rows padded by 8 and by 3 (where ld % 4 != 0, rows are not 16-byte aligned and a
//     float4 load faults [fault]); then the large case, N = 524544, C = 4096 (offsets
//     past 2^31).
//   * the same bits on a repeated run [nondeterministic]: each row's sums in a fixed order
//     (a block tree) give them, so a difference is a race, e.g. two block sums sharing one
//     shared array without a barrier between them.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which every input ends where unmapped memory begins [oob_read].
//
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

void student::layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                            int N, int C, int ld, float eps, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch06_layernorm/ex1_layernorm_f32.cu");  // delete this line when you start

  if (N == 0) return;    // nothing to do: a grid of zero blocks is a launch error
  const int blocks = 1;  // TODO: one block per row
  layernorm_f32_kernel<<<blocks, kThreads, 0, stream>>>(x, gamma, beta, y, mean, rstd, N, C, ld, eps);
  WB_CHECK_LAUNCH();
}

}  // namespace ch06
