// v2 — online softmax: the max and the sum in one pass, then the normalize pass.
//
// Over v1: each thread keeps the pair (m, s) while it reads, rescaling s when m grows, and
// the pairs merge exactly (m = max, s = s1 e^(m1-m) + s2 e^(m2-m)): one read for the
// statistics instead of two. A thread's float4 batch is rescaled once (one exp per logit,
// not two). The row is read twice and written once: 12 bytes per logit, against v1's 16.
//
// Run: build/ch07/bin/ch07_bench --op=softmax/f32 --impl=v2_online
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "row_topk.cuh"

namespace ch07::solution {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

// grid (B): one block per row. kVector: V % 4 == 0, so every row is 16-byte aligned.
template <bool kVector>
__global__ void __launch_bounds__(kThreads)
    online_kernel(const float* __restrict__ x, float* __restrict__ probs, int V) {
  __shared__ Stats area[kWarps];
  const float* row = x + size_t(blockIdx.x) * V;
  float* out = probs + size_t(blockIdx.x) * V;

  Stats st;
  if constexpr (kVector) {
    for (int v = 4 * threadIdx.x; v < V; v += 4 * kThreads) {
      const float4 q = *reinterpret_cast<const float4*>(row + v);
      const float batch[4] = {q.x, q.y, q.z, q.w};
      add_values(st, batch);
    }
  } else {
    for (int v = threadIdx.x; v < V; v += kThreads) {
      const float one[1] = {row[v]};
      add_values(st, one);
    }
  }
  const Stats all = block_stats<kWarps>(st, area);

  if constexpr (kVector) {
    for (int v = 4 * threadIdx.x; v < V; v += 4 * kThreads) {
      const float4 q = *reinterpret_cast<const float4*>(row + v);
      *reinterpret_cast<float4*>(out + v) =
          make_float4(probability(q.x, all), probability(q.y, all), probability(q.z, all), probability(q.w, all));
    }
  } else {
    for (int v = threadIdx.x; v < V; v += kThreads) out[v] = probability(row[v], all);
  }
}

}  // namespace

void softmax_online(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  require_valid(B, V, 0, false);
  const bool vector =
      V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(probs) % 16 == 0;
  if (vector)
    online_kernel<true><<<B, kThreads, 0, stream>>>(x, probs, V);
  else
    online_kernel<false><<<B, kThreads, 0, stream>>>(x, probs, V);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ch07::solution
