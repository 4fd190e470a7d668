// Exercise 3 — top-k: the k largest logits of each row, sorted, with their indices.
//
// Goal: values[b * k + j] and indices[b * k + j] for j = 0..k-1: the j-th largest logit of
// row b and where it is, largest first, EQUAL LOGITS BY THE LOWER INDEX, for 1 <= k <= 64
// and any V (k = V included). Rows of -inf and rows of one repeated value are tested: then
// the order is decided by the indices alone.
//
// A plan that works (section "Top-k in registers" shows faster ones):
//   * one block per row; each thread keeps ITS OWN best k in a small sorted array (insert
//     by shifting), reading its strided share of the row;
//   * the block then merges the per-thread lists: write them to shared memory and let one
//     warp (or one thread, to start) pick the k best of them.
// Comparing two (value, index) pairs is the heart of it: a before b when a.value > b.value,
// or when the values are equal and a.index < b.index. Write that once, as a function.
//
// What the tests check, and the outcome code a failure gets:
//   * values and indices exactly: the k largest logits, largest first, equal logits by the
//     lower index [wrong]; on ties, masked logits and rows of -inf only (indices 0 .. k-1).
//   * every value and index written [unwritten], nothing outside them [oob_write], no NaN
//     [nan].
//   * V = 1 ... 262144 with k = 1, 5, 50, 64 and k = V, B up to 256; then the large
//     case, B = 8193, V = 262144, k = 64 (offsets past 2^31).
//   * refused, before anything is launched [accepted_bad_args]: k > V, k < 1 and k > 64
//     (require_valid does it).
//   * the same bits on a repeated run [nondeterministic]: the order above makes the answer
//     unique, so a difference is a race; chapter 9's model takes its next token from this
//     kernel, and the same prompt must give the same tokens every run.
//   * all work on `stream` [outside_stream]; a second call, same workspace, new inputs
//     [cached]: a counter back at 0; x ends where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch07 -R ex3_topk
// Bench: build/ch07/bin/ch07_bench --op=topk/f32
// Guide: docs/ch07-softmax-topk.md, section "Exercise 3".
#include "ch07.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch07 {
namespace {

constexpr int kThreads = 128;

// One block per row.
__global__ void topk_kernel(const float* x, float* values, int32_t* indices, int V, int k) {
  // TODO: float best_v[kMaxK]; int best_i[kMaxK]; int have = 0;   (per thread, sorted)
  // TODO: for v = threadIdx.x; v < V; v += kThreads: insert (row[v], v) if it belongs.
  // TODO: merge the threads' lists in shared memory; write the k best of the row.
}

}  // namespace

void student::topk(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                   cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch07_softmax_topk/ex3_topk.cu");  // delete this line when you start

  require_valid(B, V, k);  // refuses k < 1, k > V, k > kMaxK with a message
  (void)workspace;         // scratch, if you split a row over several blocks (ch07.cuh)
  const int blocks = 1;    // TODO: one block per row
  topk_kernel<<<blocks, kThreads, 0, stream>>>(x, values, indices, V, k);
  WB_CHECK_LAUNCH();
}

}  // namespace ch07
