// Exercise 2 — the scores, the mask and the softmax fused into one kernel, FP32.
//
// Goal: p = softmax(scale * Q K^T, masked) written ONCE, in one kernel, from q, k and the
// causal flag: no scores buffer, no separate mask and softmax kernels. Unfused (three
// kernels), the Sq x Sk matrix crosses DRAM five times: written by the scores, read and
// written by the mask, read and written by the softmax. Fused, once.
// The catch: the softmax of a row needs the row's maximum and sum before the first p can be
// written, and the row's scores are spread over many keys. Two ways out:
//   * keep the row's scores on chip until the row is done (shared memory: how long can a
//     row be?), or
//   * sweep the keys twice: the first sweep keeps only a running max and sum per row (the
//     online softmax of chapter 7), the second recomputes the scores and writes p.
// Work on a tile of query rows per block, and stage tiles of k in shared memory so that
// every k row read from DRAM serves all the block's queries.
//
// What the tests check, and the outcome code a failure gets:
//   * p within a relative bound from FP32 rounding (it grows with sqrt(D) and sqrt(Sk)), and
//     its largest error at most 2x that of the library's unfused probabilities on the same
//     inputs, plus 1e-7 [wrong]; masked entries 0; no NaN, even in rows that see no key [nan].
//   * every element of p written, the masked ones too [unwritten]; nothing outside [oob_write].
//   * Sq, Sk = 1 ... 1000 and 4096 (square and not), D = 32, 64, 96, 128, causal or not,
//     B * H up to 128, peaked and rising inputs, random shapes. Then the large
//     case: 128 heads of 4097 x 4097 probabilities (offsets past 2^31).
//   * the same bits on a repeated run [nondeterministic]: a fixed order per row, so a
//     difference is a race.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which q and k end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch08 -R ex2_fused_scores_softmax
// Bench: build/ch08/bin/ch08_bench --op=attention_probs
// Guide: docs/ch08-flash-attention.md, section "Exercise 2".
#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch08 {
namespace {

constexpr int kRows = 64;  // query rows per block
constexpr int kThreads = 256;

// blockIdx.x: a tile of kRows query rows; blockIdx.y: bh.
__global__ void fused_scores_softmax_kernel(const float* q, const float* k, float* p, int Sq, int Sk, int D,
                                            float scale, bool causal) {
  // TODO: stage this block's kRows rows of q in shared memory (zeros past Sq).
  // TODO: sweep 1, over tiles of keys (staged in shared memory): the scores of your rows,
  //       the mask, and per row a running max m and sum l (when m grows, l *= exp(m_old - m)).
  // TODO: combine the partial (m, l) of the threads that share a row.
  // TODO: sweep 2: recompute each score and write p = exp(s - m) / l, and 0 where hidden
  //       (rows past Sq are not written; a row that sees no key is all 0).
}

}  // namespace

void student::fused_scores_softmax(const float* q, const float* k, float* p, int B, int H, int Sq, int Sk, int D,
                                   float scale, bool causal, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch08_flash_attention/ex2_fused_scores_softmax.cu");  // delete this line when you start

  const dim3 grid((Sq + kRows - 1) / kRows, B * H);  // tiles of kRows query rows x heads
  fused_scores_softmax_kernel<<<grid, kThreads, 0, stream>>>(q, k, p, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
