// Exercise 3 — the implicit GEMM of exercise 2 on mma.sync m16n8k16, fed by cp.async.
//
// Goal: the same op as exercise 2 (ch10.cuh), faster: larger tiles (128 pixels x 128
// channels), fragments loaded with ldmatrix from padded shared memory, and the next K step's
// tiles copied with cp.async while the tensor cores work on this one (two stages). The
// epilogue works on the accumulator registers directly: no staging tile.
//
// The im2col copy with cp.async: when C % 8 == 0, the 8 channels c0 .. c0 + 7 of one tap
// (r, s) are 16 contiguous, 16-byte aligned bytes of x, one cp.async of 16 bytes; a tap in
// the padding is the same copy with src-size 0 (zeros, nothing read: wb::ptx::cp_async_16's
// `valid`). Each thread's pixel rows stay the same across K steps: split m into (n, p, q)
// once, before the loop. When C % 8 != 0 no 16-byte copy lines up: keep exercise 2's scalar
// loader for those shapes (call your own slower path; the tests meet C = 1, 3, 13 ...).
//
// Shared pieces: harness/device/mma.cuh (ldmatrix_x4, mma_16816<bf16>: read its layout
// comment), harness/device/async_copy.cuh (cp_async_16, cp_async_commit, cp_async_wait<N>).
//
// What the tests check: everything of exercise 2 (the same op, shapes and outcome codes),
// and, since they share an op, the same reference and tolerance.
//
// Test:  ctest --preset ch10 -R ex3_implicit_gemm_mma
// Bench: build/ch10/bin/ch10_bench --benchmark_filter=conv2d_bn_relu
// Guide: docs/ch10-conv.md, section "Exercise 3".
#include "ch10.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch10 {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32;  // block tile, and the K step
constexpr int kThreads = 256;                  // 8 warps as 4 (pixels) x 2 (channels), 32 x 64 each
static_assert(kBM % 32 == 0 && kBN % 64 == 0 && kBK % 16 == 0, "whole warp tiles and k16 slices");

__global__ void conv_implicit_mma_kernel(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                         ConvShape s) {
  // TODO: shared tiles As[2][kBM][kBK + 8], Bs[2][kBN][kBK + 8] (the +8 keeps ldmatrix's
  //       eight row addresses on different banks).
  // TODO: before the loop: each thread's two pixel rows of A -> (n, p*stride - pad, q*stride - pad).
  // TODO: prologue: copy K step 0 into stage 0, commit. Loop: copy step t + 1 into the other
  //       stage, commit, wait until step t has landed (cp_async_wait<1>), __syncthreads(),
  //       two k16 slices of ldmatrix + mma, __syncthreads().
  // TODO: epilogue on the registers: d0, d1 = (row g, channels 2q, 2q + 1), d2, d3 = row g + 8.
}

}  // namespace

void student::conv_implicit_mma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                                cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch10_conv/ex3_implicit_gemm_mma.cu");  // delete this line when you start

  require_valid(s);
  const dim3 grid(1, 1);  // TODO: ceil(N * P * Q / kBM) x ceil(K / kBN); C % 8 != 0: the scalar path
  conv_implicit_mma_kernel<<<grid, kThreads, 0, stream>>>(x, w, bn, residual, y, s);
  WB_CHECK_LAUNCH();
}

}  // namespace ch10
