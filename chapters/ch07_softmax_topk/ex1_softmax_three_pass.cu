// Exercise 1 — row softmax, FP32, in three passes.
//
// Goal: for every row b of x (V floats), write
//   M = max_v x[v],   S = sum_v exp(x[v] - M),   probs[v] = exp(x[v] - M) / S
// for ANY B and V (V = 1, 7, 50257, 262144 ...), also for logits of size 1e4 (without
// the "- M", exp(1e4) is +inf and every probability becomes NaN) and for rows with -inf
// in them (a masked token's probability is exactly 0; a row of -inf ONLY gives 0
// everywhere: guard the division). One block per row is the natural start: pass 1 is the
// block maximum (chapter 3's reduction), pass 2 the block sum, pass 3 the division.
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
//   * the same bits on a repeated run [nondeterministic]: a block's max and sum in a fixed
//     order give them, so a difference is a race.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which x ends where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch07 -R ex1_softmax_three_pass
// Bench: build/ch07/bin/ch07_bench --op=softmax/f32
// Guide: docs/ch07-softmax-topk.md, section "Exercise 1".
#include "ch07.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch07 {
namespace {

constexpr int kThreads = 256;

// One block per row: blockIdx.x is the row.
__global__ void softmax_three_pass_kernel(const float* x, float* probs, int V) {
  // TODO: const float* row = x + (size_t)blockIdx.x * V;   (size_t: B * V can pass 2^31)
  // TODO: pass 1: every thread takes the max of row[v] for v = threadIdx.x, + kThreads, ...
  //       (start from -INFINITY), then the block takes the max of those; every thread
  //       reads the result from shared memory.
  // TODO: pass 2: the same for the sum of expf(row[v] - M). If M is -INFINITY the row is
  //       all masked: (-inf) - (-inf) is NaN, so skip the exp and let the sum be 0.
  // TODO: pass 3: probs[v] = S > 0 ? expf(row[v] - M) / S : 0.
}

}  // namespace

void student::softmax_three_pass(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch07_softmax_topk/ex1_softmax_three_pass.cu");  // delete this line when you start

  require_valid(B, V, 0, false);  // refuses B < 1 or V < 1 with a message
  const int blocks = 1;           // TODO: one block per row
  softmax_three_pass_kernel<<<blocks, kThreads, 0, stream>>>(x, probs, V);
  WB_CHECK_LAUNCH();
}

}  // namespace ch07
