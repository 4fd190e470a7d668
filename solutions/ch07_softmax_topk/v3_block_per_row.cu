// v3 — top-k (and softmax + top-k) with one block per row and warp lists in registers.
//
// Over a thread-per-list design (exercise 3's plan): a per-thread sorted array of 64 is
// indexed dynamically, so it lives in local memory, and inserting costs up to 64 moves. Here
// each WARP keeps its best 64 keys spread over its lanes (2 registers each), sorted. A logit
// is only a candidate if its key beats the warp's k-th best; candidates of a batch are
// appended to a small staging area in shared memory with one ballot, and only when 64 have
// gathered are they sorted and merged into the list (two bitonic networks of shuffles). As
// the list fills, the threshold rises and nearly every logit is rejected by one compare, so
// the cost per logit is a load, a compare and (for probabilities) one exp: the row is read
// once. The warps share their thresholds through one shared word (the largest one is a floor
// for all). At the end the 8 warp lists are merged in a tree, and warp 0 writes the result.
//
// One block per row is right when the batch fills the GPU (256 rows on 132 SMs); with a
// handful of rows most SMs idle: v4 splits rows.
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v3_block_per_row
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "row_topk.cuh"

namespace ch07::solution {
namespace {

constexpr int kThreads = 256, kVec = 2;
constexpr int kWarps = kThreads / 32;

// grid (B): one block per row. probabilities: values are probabilities (else logits);
// probs != nullptr: the whole probability row too (a second read of the row).
template <bool kVector>
__global__ void __launch_bounds__(kThreads)
    block_topk_kernel(const float* __restrict__ x, float* __restrict__ probs, float* __restrict__ values,
                      int32_t* __restrict__ indices, int V, int k, bool probabilities) {
  __shared__ Key area[kWarps * kList];  // each warp's staging area, then the merge tree's
  __shared__ Stats stats_area[kWarps];
  __shared__ Key floor;
  if (threadIdx.x == 0) floor = kNoKey;
  __syncthreads();

  const int b = blockIdx.x, warp = threadIdx.x / 32;
  const float* row = x + size_t(b) * V;
  const bool with_stats = probabilities || probs != nullptr;
  WarpTopK top(area + warp * kList, &floor, k);
  Stats st;
  scan_chunk<kThreads, kVec, kVector>(row, 0, V, with_stats, top, st);

  const Stats all = with_stats ? block_stats<kWarps>(st, stats_area) : Stats{};
  block_merge<kWarps>(top.list, area);
  if (warp == 0) write_topk(top.list, row, values + size_t(b) * k, indices + size_t(b) * k, k, probabilities, all);
  if (probs != nullptr) {
    float* out = probs + size_t(b) * V;
    for (int v = threadIdx.x; v < V; v += kThreads) out[v] = probability(row[v], all);
  }
}

void launch(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            cudaStream_t stream) {
  require_valid(B, V, k);
  if (V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0) {
    block_topk_kernel<true><<<B, kThreads, 0, stream>>>(x, probs, values, indices, V, k, probabilities);
  } else {
    block_topk_kernel<false><<<B, kThreads, 0, stream>>>(x, probs, values, indices, V, k, probabilities);
  }
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void topk_block(const float* x, float* values, int32_t* indices, int B, int V, int k, void*, cudaStream_t stream) {
  launch(x, nullptr, values, indices, B, V, k, false, stream);
}

void softmax_topk_block(const float* x, float* values, int32_t* indices, int B, int V, int k, void*,
                        cudaStream_t stream) {
  launch(x, nullptr, values, indices, B, V, k, true, stream);
}

void softmax_topk_probs_block(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, void*,
                              cudaStream_t stream) {
  launch(x, probs, values, indices, B, V, k, true, stream);
}

}  // namespace ch07::solution
