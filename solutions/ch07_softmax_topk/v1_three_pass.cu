// v1 — softmax in three passes, one block per row.
//
// The textbook form: pass 1 finds the row's max M (a block reduction, chapter 3), pass 2
// sums exp(x - M), pass 3 writes exp(x - M) / S. Subtracting M keeps every exp in [0, 1]:
// no overflow at logits of 1e4. Each pass reads the whole row, so a row is read three
// times and written once: 16 bytes of traffic per logit where 8 would do (rows of 128k
// logits are 500 KB, so the later passes mostly hit L2, which softens it).
//
// Run: build/ch07/bin/ch07_bench --op=softmax/f32 --impl=v1_three_pass
#include <cfloat>

#include "runtime/errors.cuh"
#include "device/reduce.cuh"
#include "ladder.cuh"
#include "row_topk.cuh"

namespace ch07::solution {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// grid (B): one block per row; V logits per row.
__global__ void __launch_bounds__(kThreads)
    three_pass_kernel(const float* __restrict__ x, float* __restrict__ probs, int V) {
  __shared__ float area[kWarps];
  const float* row = x + size_t(blockIdx.x) * V;
  float* out = probs + size_t(blockIdx.x) * V;

  float m = -INFINITY;  // pass 1: the max
  for (int v = threadIdx.x; v < V; v += kThreads) m = fmaxf(m, row[v]);
  m = wb::block_reduce<kThreads>(m, wb::Max{}, area);  // the block's max (harness/device/reduce.cuh)
  __syncthreads();                                     // every thread has read area: it may be reused

  float s = 0.0f;  // pass 2: the sum of exp(x - M); a row of -inf only sums to 0
  if (m != -INFINITY) {
    for (int v = threadIdx.x; v < V; v += kThreads) s += exp_rel(row[v], m);
  }
  s = wb::block_reduce<kThreads>(s, wb::Sum{}, area);

  for (int v = threadIdx.x; v < V; v += kThreads) out[v] = probability(row[v], {m, s});  // pass 3
}

}  // namespace

void softmax_three_pass(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  require_valid(B, V, 0, false);
  three_pass_kernel<<<B, kThreads, 0, stream>>>(x, probs, V);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ch07::solution
