// Exercise 2 — online softmax: the max and the sum in ONE pass over the logits.
//
// Goal: the same output as exercise 1, reading each logit twice instead of three times.
// Keep a running pair (m, s): m the max so far, s the sum of exp(x - m) so far. A new
// value x with x > m changes the reference point: the old sum was relative to the old m,
// so it is RESCALED, s = s * exp(m - x) + 1, then m = x; otherwise s += exp(x - m). Two
// pairs (m1, s1), (m2, s2) combine the same way:
//   m = max(m1, m2),   s = s1 * exp(m1 - m) + s2 * exp(m2 - m)
// which is what the threads of a block (and later the CTAs of a split row) do with their
// partial pairs. Careful with m = -inf (nothing but masked logits so far): exp(-inf - -inf)
// is NaN; such a pair has s = 0 and must stay (-inf, 0).
//
// What the tests check, and the outcome code a failure gets:
//   * probs within a relative 128u + 4u*sqrt(V) (u = 2^-24) of a float64 softmax [wrong], on
//     logits near 1e4 and spread over +-1e4 (subtract the max), 60 % masked (-inf gives
//     exactly 0), and rows of -inf only (0 everywhere, never NaN [nan]).
//   * every probability written [unwritten], nothing outside probs [oob_write].
//   * V = 1, 2, 7, 31, 1000 ... 262144, B = 1 ... 256, and random shapes; then the large
//     case, B = 8193, V = 262144 (offsets past 2^31).
//   * refused: B = 0 must throw std::invalid_argument before anything is launched
//     (require_valid does it) [accepted_bad_args].
//   * the same bits on a repeated run [nondeterministic]: merge the (m, s) pairs in a fixed
//     order (a shuffle tree, then the warps in order), so a difference is a race.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which x ends where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch07 -R ex2_online_softmax
// Bench: build/ch07/bin/ch07_bench --op=softmax/f32
// Guide: docs/ch07-softmax-topk.md, section "Exercise 2: online softmax".
#include "ch07.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch07 {
namespace {

constexpr int kThreads = 256;

// One block per row.
__global__ void softmax_online_kernel(const float* x, float* probs, int V) {
  // TODO: each thread walks its share of the row once, keeping (m, s) as above.
  // TODO: combine the pairs: first inside each warp (__shfl_xor_sync on m and s), then the
  //       warps' pairs through shared memory; every thread reads the row's (M, S).
  // TODO: second pass: probs[v] = S > 0 ? expf(row[v] - M) / S : 0.
}

}  // namespace

void student::softmax_online(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch07_softmax_topk/ex2_online_softmax.cu");  // delete this line when you start

  require_valid(B, V, 0, false);
  const int blocks = 1;  // TODO: one block per row
  softmax_online_kernel<<<blocks, kThreads, 0, stream>>>(x, probs, V);
  WB_CHECK_LAUNCH();
}

}  // namespace ch07
