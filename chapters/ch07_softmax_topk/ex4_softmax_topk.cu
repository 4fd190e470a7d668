// Exercise 4 — softmax and top-k fused: the sampling step of a language model.
//
// Goal (first form, softmax_topk): the k most probable tokens of each row — values are
// their PROBABILITIES, indices where they are — reading the logits ONCE. The order of the
// probabilities is the order of the logits, so one pass can keep both the online pair
// (m, s) of exercise 2 and the top-k candidates of exercise 3 (as logits); at the end
// p = exp(x - M) / S for the k winners only. Ties and -inf as in exercise 3; a row of
// -inf only: values 0, indices 0..k-1.
//
// Second form (softmax_topk_probs): the same, and the whole probability row `probs` too
// (one more pass: each logit read again and written as a probability).
//
// With a batch of 1 to 64 rows, one block per row leaves most of the GPU idle: split each
// row over several blocks, each finding its chunk's (m, s) and top-k into `workspace`, and
// merge them (a second kernel, or the last block of the row to finish: section "Two
// regimes").
//
// What the tests check, and the outcome code a failure gets:
//   * values (probabilities) and probs within a relative 128u + 4u*sqrt(V) of float64
//     [wrong]; indices exactly, in the logits' order, equal logits by the lower index
//     [wrong]; logits near 1e4, ties, masked rows, rows of -inf only (values 0).
//   * every output written [unwritten], nothing outside [oob_write], no NaN [nan].
//   * V = 1 ... 262144 with k = 1, 5, 50, 64 and k = V, B up to 256; then the large
//     case, B = 8193, V = 262144, k = 64 (offsets past 2^31).
//   * refused, both forms, before anything is launched [accepted_bad_args]: k > V, k < 1,
//     k > 64.
//   * the same bits on a repeated run [nondeterministic]: merge a split row's partials in a
//     fixed order (partial sums added with a float atomicAdd would change the last bits).
//   * all work on `stream` [outside_stream]; a second call, same workspace, new inputs
//     [cached]: every counter back at 0; x ends where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch07 -R ex4_
// Bench: build/ch07/bin/ch07_bench --op=softmax_topk/f32
// Guide: docs/ch07-softmax-topk.md, section "Exercise 4".
#include "ch07.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch07 {
namespace {

constexpr int kThreads = 128;

// One block per row, to start.
__global__ void softmax_topk_kernel(const float* x, float* probs, float* values, int32_t* indices, int V, int k) {
  // TODO: one pass over the row: the online (m, s) and the top-k candidates together.
  // TODO: combine the threads' pairs and lists; the row's (M, S) and its k best logits.
  // TODO: values[j] = S > 0 ? expf(x[index] - M) / S : 0; indices[j] = index.
  // TODO: when probs != nullptr (the second form): a second pass writing every probability.
}

}  // namespace

void student::softmax_topk(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                           cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch07_softmax_topk/ex4_softmax_topk.cu");  // delete this line when you start

  require_valid(B, V, k);
  (void)workspace;
  const int blocks = 1;  // TODO: one block per row (or several: see above)
  softmax_topk_kernel<<<blocks, kThreads, 0, stream>>>(x, nullptr, values, indices, V, k);
  WB_CHECK_LAUNCH();
}

void student::softmax_topk_probs(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                 void* workspace, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch07_softmax_topk/ex4_softmax_topk.cu");  // delete this line when you start

  require_valid(B, V, k);
  (void)workspace;
  const int blocks = 1;  // TODO
  softmax_topk_kernel<<<blocks, kThreads, 0, stream>>>(x, probs, values, indices, V, k);
  WB_CHECK_LAUNCH();
}

}  // namespace ch07
