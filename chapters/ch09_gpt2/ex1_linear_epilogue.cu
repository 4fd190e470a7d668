// Exercise 1 — the fused GEMM epilogue: y = x · Wᵀ + b and y = gelu_tanh(x · Wᵀ + b) in ONE
// kernel, BF16 in and out, FP32 accumulate.
//
// Goal: for every (m, n), y[m][n] = epilogue(sum_k x[m][k] * W[n][k] + b[n]) (ch09.cuh),
// with W stored [N, K] as the model loads it. Unfused, a GEMM writes x · Wᵀ to memory, a
// second kernel reads it back to add b, a third for GELU: (M x N) elements crossing DRAM
// three more times. Fused, the accumulator gets the bias and the GELU while it is still in
// registers, and y is written once. That is the whole idea of an epilogue.
// Walk it in steps (docs/ch09-transformer.md, "Exercise 1"):
//   1. one thread per output element, a loop over k: right for every shape, and the place
//      to get the epilogue right (bias in FP32, then GELU, then one rounding to BF16);
//   2. tiles: a (BM, BK) tile of x and a (BN, BK) tile of W in shared memory per step of k
//      (note: W's tile is BN ROWS of W, each BK long — W is [N, K]), each thread computing a
//      few outputs from shared memory;
//   3. tensor cores (chapter 5): nvcuda::wmma fragments of 16 x 16 x 16 BF16. W [N, K]
//      row-major is exactly a col_major matrix_b of shape (K, N) with ldm = K.
//
// What the tests check, and the outcome code a failure gets:
//   * y within one BF16 rounding plus an FP32 sum of K + 1 terms of a float64 reference, and
//     1e-5 more for the GELU's tanh [wrong]: the erf GELU, W read as [K, N] or the bias
//     added twice fail (the message says which); NaN never passes [nan].
//   * every element of y written [unwritten], nothing outside y [oob_write].
//   * both epilogues (bias; bias + GELU) on M x N x K from 1 x 1 x 1 to 2048^3: primes, one
//     off 128 and 256, K = 1 and 4097, GPT-2's 64 x 2304 x 768 ..., random shapes. Then the
//     large case, 65537 x 32769 x 8 (the output passes 2^31 elements: 64-bit offsets).
//   * the same bits on a repeated run [nondeterministic]: one owner per output and a fixed
//     order over k give them; the model's prefill runs this kernel, and one prompt must give
//     the same tokens every run.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which x, W and b end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch09 -R ex1_linear_epilogue
// Bench: build/ch09/bin/ch09_bench --op=linear_bias_gelu/bf16
// Guide: docs/ch09-transformer.md, section "Exercise 1".
#include "ch09.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch09 {
namespace {

constexpr int kTile = 16;  // (kTile, kTile) threads, one output each, to start with

// grid (ceil(N / 16), ceil(M / 16)), block (16, 16): thread (tx, ty) owns y[m][n] with
// n = blockIdx.x * 16 + tx and m = blockIdx.y * 16 + ty.
__global__ void linear_kernel(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi) {
  // TODO: const int n = ..., m = ...;  return when outside (m >= M or n >= N).
  // TODO: float acc = 0; for k: acc += float(x[m * K + k]) * float(w[n * K + k]);
  //       (size_t for the offsets: M * K can pass 2^31)
  // TODO: if (epi != Epilogue::None) acc += float(b[n]);
  //       if (epi == Epilogue::BiasGelu) acc = gelu_tanh(acc);
  // TODO: y[m * N + n] = __float2bfloat16(acc);
}

}  // namespace

void student::linear(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                     cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch09_gpt2/ex1_linear_epilogue.cu");  // delete this line when you start

  require_valid(M, N, K, epi, b);
  const dim3 block(kTile, kTile);
  const dim3 grid(1, 1);  // TODO: (ceil(N / kTile), ceil(M / kTile))
  linear_kernel<<<grid, block, 0, stream>>>(x, w, b, y, M, N, K, epi);
  WB_CHECK_LAUNCH();
}

}  // namespace ch09
