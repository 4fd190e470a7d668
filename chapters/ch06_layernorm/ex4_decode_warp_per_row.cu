// Exercise 4 — exercise 2 with one warp per row: the decode form.
//
// Goal: the same op as exercise 2 (h = bf16(x + r), y = LayerNorm(h), mean, rstd), with a
// WARP per row and several rows per block. In decoding a transformer produces one token
// per sequence at a time, so N is small (1 to a few hundred) and C is the hidden size. The
// reductions are then five __shfl_xor_sync steps: no shared memory and no __syncthreads(),
// and after an xor butterfly every lane holds the total. Target: one row of 4096 in a few
// microseconds, about the time of one trip to DRAM and back.
//
// What the tests check, and the outcome code a failure gets:
//   * h equal, bit for bit, to the BF16 rounding of the FP32 sum x + r [wrong]; y, mean and
//     rstd from h AS ROUNDED, within tolerances that grow with sqrt(C) and |mean| / std
//     [wrong], also on rows of mean 1000 and -1e4 (std 1); NaN never passes [nan].
//   * every element of h, y, mean and rstd written [unwritten]; the padding [C, ld) of h and y
//     left untouched [wrote_padding]; nothing outside the outputs [oob_write].
//   * exercise 2's shapes: N = 1 ... 1000 and C up to 12288 (a warp walks long rows too),
//     rows padded by 3 that are not 16-byte aligned [fault]; the large case, N = 16384,
//     C = 1024, after the others pass.
//   * the same bits on a repeated run [nondeterministic]: a shuffle butterfly adds in a fixed
//     order, so a difference is a race.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which every input ends where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch06 -R ex4_decode_warp_per_row
// Bench: build/ch06/bin/ch06_bench
// Guide: docs/ch06-layernorm.md, section "Exercise 4".
#include "ch06.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch06 {
namespace {

constexpr int kWarpsPerBlock = 4;  // rows per block: one per warp

__global__ void residual_layernorm_warp_kernel(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta,
                                               bf16* h, bf16* y, float* mean, float* rstd, int N, int C, int ld,
                                               float eps) {
  // TODO: row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32.
  //       A warp whose row is >= N returns at once (no barrier waits for it).
  // TODO: each lane walks the row with stride 32 (or 32 x 8 with 16-byte loads when the row
  //       is 16-byte aligned), as in exercise 2.
  // TODO: sum across the warp: for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(~0u, v, o);
  // TODO: lane 0 writes mean[row] and rstd[row].
}

}  // namespace

void student::residual_layernorm_warp(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h,
                                      bf16* y, float* mean, float* rstd, int N, int C, int ld, float eps,
                                      cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch06_layernorm/ex4_decode_warp_per_row.cu");  // delete this line when you start

  if (N == 0) return;
  const int blocks = 1;  // TODO: enough blocks for N rows at kWarpsPerBlock rows each (round up)
  residual_layernorm_warp_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(x, r, gamma, beta, h, y, mean, rstd, N, C,
                                                                             ld, eps);
  WB_CHECK_LAUNCH();
}

}  // namespace ch06
