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
#include "ladder.cuh"
#include "row_topk.cuh"

namespace ch07::solution {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

template <class Op>
__device__ float block_reduce(float v, Op op, float* area) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFull, v, o));
  if ((threadIdx.x & 31) == 0) area[threadIdx.x / 32] = v;
  __syncthreads();
  float all = area[0];
  for (int w = 1; w < kWarps; ++w) all = op(all, area[w]);
  __syncthreads();
  return all;
}

// grid (B): one block per row; V logits per row.
__global__ void __launch_bounds__(kThreads) three_pass_kernel(const float* __restrict__ x, float* __restrict__ probs,
                                                              int V) {
  __shared__ float area[kWarps];
  const float* row = x + size_t(blockIdx.x) * V;
  float* out = probs + size_t(blockIdx.x) * V;

  float m = -INFINITY;  // pass 1: the max
  for (int v = threadIdx.x; v < V; v += kThreads) m = fmaxf(m, row[v]);
  m = block_reduce(m, [](float a, float b) { return fmaxf(a, b); }, area);

  float s = 0.0f;  // pass 2: the sum of exp(x - M); a row of -inf only sums to 0
  if (m != -INFINITY) {
    for (int v = threadIdx.x; v < V; v += kThreads) s += exp_rel(row[v], m);
  }
  s = block_reduce(s, [](float a, float b) { return a + b; }, area);

  for (int v = threadIdx.x; v < V; v += kThreads) out[v] = probability(row[v], {m, s});  // pass 3
}

}  // namespace

void softmax_three_pass(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  require_valid(B, V, 0, false);
  three_pass_kernel<<<B, kThreads, 0, stream>>>(x, probs, V);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ch07::solution
