// What the split steps (v4_split_row, v5_radix_select) share around their kernels: the
// workspace through which the CTAs of a row hand their partial results to the last one, the
// last CTA's final step (finish_row), the launch of a row's chunks, and the step's public
// functions (its tunable spaces and the three top-k forms).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "ch07.cuh"
#include "row_topk.cuh"

namespace ch07::solution {

namespace {  // internal to each step's file, like the kernels that take it by value

// The workspace (ch07::workspace_bytes(B) bytes, zeroed once), per row b:
//   keys[b][split][kMaxK]   each CTA's top-k keys, sorted (v5: kNoKey where the chunk was short)
//   stats[b][split]         each CTA's (m, s)
//   row_stats[b]            the row's (M, S), for the probability pass
//   counters[b]             CTAs of row b finished so far; the last one resets it to 0
struct Workspace {
  Key* keys;
  float2* stats;
  float2* row_stats;
  unsigned* counters;

  Workspace(void* base, int B) {
    char* p = static_cast<char*>(base);
    keys = reinterpret_cast<Key*>(p);
    p += size_t(B) * kMaxSplits * kMaxK * sizeof(Key);
    stats = reinterpret_cast<float2*>(p);
    p += size_t(B) * kMaxSplits * sizeof(float2);
    row_stats = reinterpret_cast<float2*>(p);
    p += size_t(B) * sizeof(float2);
    counters = reinterpret_cast<unsigned*>(p);
  }
};

// The last CTA's last step for row b: thread 0 keeps the row's (M, S) for the probability
// pass and puts the row's counter back to 0 for the next call.
__device__ __forceinline__ void finish_row(const Workspace& ws, int b, bool with_stats, const Stats& all) {
  if (threadIdx.x == 0) {
    if (with_stats) ws.row_stats[b] = make_float2(all.m, all.s);
    ws.counters[b] = 0;
  }
}

}  // namespace

// A split step's launch around its kernel: each of the B rows is cut into `splits` chunks of
// `chunk` logits (a multiple of 4), one CTA each; run(grid, chunk, with_stats, ws) launches
// the step's kernel on grid (splits, B), then the launch is checked and, when `probs` is
// asked for, the probabilities kernel follows. `vector`: x allows float4 loads.
template <class Run>
void launch_split_row(const float* x, float* probs, int B, int V, int splits, bool probabilities, bool vector,
                      void* workspace, cudaStream_t stream, Run&& run) {
  const int chunk = static_cast<int>((((int64_t(V) + splits - 1) / splits) + 3) / 4 * 4);
  const bool with_stats = probabilities || probs != nullptr;
  const Workspace ws(workspace, B);
  run(dim3(splits, B), chunk, with_stats, ws);
  CUDA_CHECK(cudaGetLastError());
  if (probs != nullptr) launch_probs(x, probs, B, V, vector, ws.row_stats, stream);
}

// The public functions of split step `name` (split: v4, radix: v5), ladder.cuh: name_space(op),
// the step's tunable space of op (FormSpaces over make_space(op)), and the three top-k forms
// topk_name, softmax_topk_name and softmax_topk_probs_name, each one call of
//   launch(space, x, probs, values, indices, B, V, k, probabilities, workspace, stream).
#define CH07_SPLIT_STEP(name, make_space, launch)                                                                    \
  const wb::tune::Space& name##_space(const char* op) {                                                              \
    static const FormSpaces spaces(make_space);                                                                      \
    return spaces.of(op);                                                                                            \
  }                                                                                                                  \
  void topk_##name(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,            \
                   cudaStream_t stream) {                                                                            \
    launch(name##_space("topk"), x, nullptr, values, indices, B, V, k, false, workspace, stream);                    \
  }                                                                                                                  \
  void softmax_topk_##name(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,    \
                           cudaStream_t stream) {                                                                    \
    launch(name##_space("softmax_topk"), x, nullptr, values, indices, B, V, k, true, workspace, stream);             \
  }                                                                                                                  \
  void softmax_topk_probs_##name(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, \
                                 void* workspace, cudaStream_t stream) {                                             \
    launch(name##_space("softmax_topk_probs"), x, probs, values, indices, B, V, k, true, workspace, stream);         \
  }

}  // namespace ch07::solution
