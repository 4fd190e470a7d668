// Chapter 7 — softmax and top-k over a vocabulary, fused: the interface between your kernels
// and the harness.
//
// You write the launchers declared in namespace ch07::student, one exercise per file:
//   ex1_softmax_three_pass.cu   row softmax in three passes: max, sum of exp(x - max), normalize
//   ex2_online_softmax.cu       the same with ONE pass for max and sum (online softmax), then normalize
//   ex3_topk.cu                 the k largest logits of each row and their indices, sorted
//   ex4_softmax_topk.cu         softmax + top-k fused: the top-k PROBABILITIES from one read of
//                               the logits (the sampling step of a language model), and a second
//                               form that also writes the whole probability row
//
// The data: B rows (the batch) of V logits (the vocabulary), FP32, packed row-major:
//
//   x[b * V + v]        0 <= b < B, 0 <= v < V          B >= 1, V in 1..262144
//   probs[b * V + v]    softmax of row b                (the full-probability forms)
//   values[b * k + j]   the j-th largest of row b       (logits in ex3, probabilities in ex4)
//   indices[b * k + j]  its position v in the row, int32
//
// The rules the tests hold you to:
//   * softmax(x)[v] = exp(x[v] - M) / sum_u exp(x[u] - M), M = max_u x[u]. Subtracting M is
//     not optional: logits of 1e4 overflow exp() in FP32 (anything above about 88.7 does).
//   * ORDER: values are sorted from the largest down; equal logits are ordered by the LOWER
//     index first. Order by the logits, not by the rounded probabilities (two different
//     logits may round to the same FP32 probability; their order is still the logits' order).
//   * -inf is a valid logit (a masked token): its probability is exactly 0, and it still has
//     a place in the order (after every finite logit, lower index first).
//   * A row that is -inf EVERYWHERE has no distribution: every probability of it is 0, and
//     its top-k are indices 0, 1, ..., k-1 (all logits tie) with value 0 (or -inf in ex3,
//     where the values are the logits).
//   * 1 <= k <= min(V, kMaxK). Anything else is refused: call require_valid(B, V, k) first
//     in your launcher (it throws std::invalid_argument, naming the argument); the tests
//     check that nothing is launched for bad arguments.
//   * logits are never NaN (the tests never send one; what a NaN would do is up to you).
//   * logits may all lie far below zero (-1000: every exp(x) underflows; only exp(x - M)
//     is finite), or be -inf everywhere but one: the max starts from -inf, never from 0.
//   * B * V may pass 2^31 (the tests go to 8,193 rows of 262,144): a row starts at
//     b * V computed in 64 bits (size_t(b) * V); an int wraps.
//   * every output is poisoned (a NaN pattern in floats, 0xA5A5A5A5 in indices) before your launcher runs,
//     and guard bands around it are checked afterwards.
//   * workspace: workspace_bytes(B) bytes of device scratch for your launcher's partial
//     results (a row split over several CTAs). It is zeroed ONCE, when allocated, and the
//     same buffer is passed to every call: a counter you use must be back at zero when your
//     kernels finish.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch07 {

// The largest k a launcher must accept, and the most CTAs one row may be split over
// with the workspace below.
inline constexpr int kMaxK = 64;
inline constexpr int kMaxSplits = 128;

// Scratch bytes a launcher gets for B rows: per row, room for kMaxSplits partial top-k lists
// (kMaxK 8-byte entries each) and partial statistics, plus a counter and a few words.
inline size_t workspace_bytes(int64_t B) {
  return static_cast<size_t>(B) * (size_t{kMaxSplits} * (kMaxK * 8 + 16) + 64) + 256;
}

// Throws std::invalid_argument saying which argument is wrong. k = 0 means "no top-k" (the
// softmax exercises pass it).
inline void require_valid(int B, int V, int k, bool with_k = true) {
  if (B < 1) throw std::invalid_argument("B = " + std::to_string(B) + ": the batch needs at least one row");
  if (V < 1) throw std::invalid_argument("V = " + std::to_string(V) + ": a row needs at least one logit");
  if (!with_k) return;
  if (k < 1) throw std::invalid_argument("k = " + std::to_string(k) + ": ask for at least one entry (k >= 1)");
  if (k > V) {
    throw std::invalid_argument("k = " + std::to_string(k) + " is larger than the row (V = " + std::to_string(V) +
                                "): there are only V entries to choose from");
  }
  if (k > kMaxK) {
    throw std::invalid_argument("k = " + std::to_string(k) + " is above kMaxK = " + std::to_string(kMaxK) +
                                ", the most these kernels keep per row");
  }
}

// ex1, ex2: probs = softmax(x) row by row.
using SoftmaxFn = void(const float* x, float* probs, int B, int V, cudaStream_t stream);

// ex3: the k largest logits of each row (values = the logits themselves) and their indices.
using TopKFn = void(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                    cudaStream_t stream);

// ex4, first form: the top-k of softmax(x) (values = probabilities), the logits read once.
using SoftmaxTopKFn = TopKFn;

// ex4, second form: the whole probability row too.
using SoftmaxTopKProbsFn = void(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                void* workspace, cudaStream_t stream);

namespace student {
SoftmaxFn softmax_three_pass;
SoftmaxFn softmax_online;
TopKFn topk;
SoftmaxTopKFn softmax_topk;
SoftmaxTopKProbsFn softmax_topk_probs;
}  // namespace student

}  // namespace ch07
