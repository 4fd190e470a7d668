// Exercise 2 — the residual add fused with LayerNorm, BF16 in and out.
//
// Goal: in ONE kernel, for every row: h = bf16(x + r), written to h (the new residual
// stream), then y = LayerNorm(h) from h as rounded, and mean[n], rstd[n]. Unfused, the
// add and the norm move 5 x N x C elements through DRAM (read x, r; write h; read h again;
// write y); fused, 4. The kernel is memory-bound, so that is 20 % of the time.
// Walk the ladder of docs/ch06-layernorm.md in this file:
//   1. a block per row, three strided passes over global memory, shared-memory reductions;
//   2. the row held in registers: each thread loads its share once (16-byte loads of 8
//      BF16, a uint4), and the two statistics passes run over registers, not memory;
//   3. the tail of a row that is no multiple of 8, and rows that do not start 16-byte
//      aligned (ld % 8 != 0): scalar loads there.
// Test:  ctest --preset ch06 -R ex2_residual_layernorm
// Bench: build/ch06/bin/ch06_bench
// Guide: docs/ch06-layernorm.md, section "Exercise 2".
#include "ch06.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch06 {
namespace {

constexpr int kThreads = 256;

// One block per row.
__global__ void residual_layernorm_kernel(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta,
                                          bf16* h, bf16* y, float* mean, float* rstd, int N, int C, int ld,
                                          float eps) {
  // TODO: h[c] = __float2bfloat16(__bfloat162float(x[c]) + __bfloat162float(r[c])); store it,
  //       and keep the ROUNDED value (convert it back to float) for the statistics.
  // TODO: mean of h over the row (block reduction), then the sum of (h - mean)^2.
  // TODO: y[c] = bf16((h[c] - mean) * rstd * gamma[c] + beta[c]), gamma and beta in FP32.
  // TODO: thread 0 writes mean[row] and rstd[row].
}

}  // namespace

void student::residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h,
                                 bf16* y, float* mean, float* rstd, int N, int C, int ld, float eps,
                                 cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch06_layernorm/ex2_residual_layernorm.cu");  // delete this line when you start

  if (N == 0) return;
  const int blocks = 1;  // TODO: one block per row
  residual_layernorm_kernel<<<blocks, kThreads, 0, stream>>>(x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps);
  WB_CHECK_LAUNCH();
}

}  // namespace ch06
