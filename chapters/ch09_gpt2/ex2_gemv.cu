// Exercise 2 — the batch-1 form: y = epilogue(W · x + b), a GEMV that streams W once.
//
// Goal: y[n] = epilogue(sum_k W[n][k] * x[k] + b[n]) for one token, BF16 in and out, FP32
// accumulate (ch09.cuh). Decoding one token, every weight of the model is read once and
// used for ONE multiply-add: 2 FLOPs per 2 bytes. No tiling makes that compute-bound; the
// GEMV runs at memory speed or it is slow. The target is the copy bandwidth of chapter 1
// over N * K * 2 bytes.
// Walk it in steps (docs/ch09-transformer.md, "Exercise 2"):
//   1. one WARP per output row n: lane l reads W[n][l], W[n][l + 32], ... (consecutive lanes,
//      consecutive addresses: coalesced), multiplies by x, then a shuffle sum (chapter 3);
//   2. 16-byte loads: 8 BF16 of W per lane per load (a uint4), when K * 2 % 16 == 0 — a
//      scalar loop for the rest of the row and for K that is no multiple of 8;
//   3. several rows per block, x kept in shared memory (it is read N times), enough loads
//      in flight per SM to cover the DRAM latency.
//
// What the tests check, and the outcome code a failure gets:
//   * y within one BF16 rounding plus an FP32 sum of K + 1 terms of a float64 reference, and
//     1e-5 more for the GELU's tanh [wrong]; W read as [K, N], the erf GELU or the bias added
//     twice fail; NaN never passes [nan].
//   * every y[n] written [unwritten], nothing outside y [oob_write].
//   * all three epilogues (none, with a null b: the LM head; bias; bias + GELU) on N x K from
//     1 x 1 to 50257 x 768 (K = 1, 7, 63, 129, 1023, 4097: rows not a whole number of
//     16-byte pieces), random shapes. Then the large
//     case, W of 2,797,000 x 768 (past 2^31 elements: 64-bit row offsets).
//   * the same bits on a repeated run [nondeterministic]: the model's decode step runs this
//     kernel, and its graph replay must equal the eager step bit for bit.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which x, W and b end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch09 -R ex2_gemv
// Bench: build/ch09/bin/ch09_bench --op=gemv_bias/bf16
// Guide: docs/ch09-transformer.md, section "Exercise 2".
#include "ch09.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch09 {
namespace {

constexpr int kWarpsPerBlock = 8;

// grid (ceil(N / kWarpsPerBlock)), block (32 * kWarpsPerBlock): warp w of block blockIdx.x
// owns row n = blockIdx.x * kWarpsPerBlock + w.
__global__ void gemv_kernel(const bf16* x, const bf16* w, const bf16* b, bf16* y, int N, int K, Epilogue epi) {
  // TODO: const int n = ..., lane = threadIdx.x % 32;   return when n >= N.
  // TODO: const bf16* row = w + (size_t)n * K;
  // TODO: float acc = 0; for (int k = lane; k < K; k += 32) acc += float(row[k]) * float(x[k]);
  // TODO: the warp's sum: for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffff, acc, off);
  // TODO: lane 0: bias, GELU when asked (ch09::gelu_tanh), y[n] = __float2bfloat16(acc).
}

}  // namespace

void student::gemv(const bf16* x, const bf16* w, const bf16* b, bf16* y, int N, int K, Epilogue epi,
                   cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch09_gpt2/ex2_gemv.cu");  // delete this line when you start

  require_valid(1, N, K, epi, b);
  const int blocks = 1;  // TODO: ceil(N / kWarpsPerBlock)
  gemv_kernel<<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(x, w, b, y, N, K, epi);
  WB_CHECK_LAUNCH();
}

}  // namespace ch09
