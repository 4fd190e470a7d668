// Harness self-tests for chapter 7: softmax and top-k launchers with the mistakes learners
// make. Each must be rejected by the checks the learner's kernels meet; if one passes, the
// checks have gone soft.
//
//   launcher                  mistake                                        caught by
//   no_max_softmax            exp(x) / sum exp(x), no max subtracted         logits of 1e4 (exp overflows)
//   pow2_k_only               binary search with steps k/2, k/4 ... 1:       k = 5, 50, 7, 31
//                             right only when k is a power of two
//   higher_index_ties         equal logits ordered by the HIGHER index       the ties and edge-row inputs
//   forgets_k_above_v         checks k >= 1 only: k > V is launched          the op's refusals (k > V):
//                                                                            accepted_bad_args, no GPU needed
//   loses_tail_chunk          a row split in chunks of floor(V / splits):    V = 7, 1000, 50257 ...
//                             the last V % splits logits are never read
//   merge_missing_barrier     the warps' lists merged in a tree with no      run-to-run differences, lists
//                             __syncthreads between writing and reading      read before written, or the
//                                                                            race pass (racecheck)
//   max_from_zero_softmax     the row max started at 0 (and 0 written for    logits far below zero: every
//                             a row whose sum is 0)                          exp(x - 0) underflows
//   int_row_offset_topk       the row start b * V in int                     the large_rows inputs (rows
//                                                                            past element 2^31)
//   vector_path_drops_row_    a float4 path on aligned rows over V / 4 * 4   V = 1002 and 32003 (the rows
//   tail                      logits: the last V % 4 dropped                  that start aligned)
//
// The first four are one-thread-per-row kernels (slow and simple); the last two reuse the
// solution's warp lists (solutions/ch07_softmax_topk/row_topk.cuh) with one change each.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "ch07.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"
#include "row_topk.cuh"
#include "declare/op.cuh"

namespace ch07::broken {
namespace {

using namespace ch07::solution;

// grid (B): probs = exp(x) / sum exp(x). Fine for logits near 0; exp(1e4) is +inf.
__global__ void no_max_kernel(const float* x, float* probs, int V) {
  const float* row = x + size_t(blockIdx.x) * V;
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.0f;
  __syncthreads();
  float s = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) s += expf(row[v]);
  atomicAdd(&total, s);
  __syncthreads();
  for (int v = threadIdx.x; v < V; v += blockDim.x) probs[size_t(blockIdx.x) * V + v] = expf(row[v]) / total;
}

void no_max_softmax(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  require_valid(B, V, 0, false);
  no_max_kernel<<<B, 256, 0, stream>>>(x, probs, V);
  CUDA_CHECK(cudaGetLastError());
}

// grid (B), 256 threads: a float4 path on rows that start 16-byte aligned, over the first
// V / 4 * 4 logits only; the last V % 4 are neither in the max and the sum nor written (the
// scalar path, for unaligned rows, is right). Right whenever V % 4 == 0; the vector-tail
// shapes V = 1002 and 32003 (every other row, or every fourth, starts aligned) are not.
__device__ float block_reduce_256(float v, bool take_max) {
  __shared__ float part[256];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const float o = part[threadIdx.x + half];
      part[threadIdx.x] = take_max ? fmaxf(part[threadIdx.x], o) : part[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const float r = part[0];
  __syncthreads();
  return r;
}
__global__ void vec4_no_tail_kernel(const float* x, float* probs, int V) {
  const float* row = x + size_t(blockIdx.x) * V;
  float* out = probs + size_t(blockIdx.x) * V;
  const bool vec = wb::aligned16(row);
  const int n = vec ? V / 4 * 4 : V;  // the mistake: V % 4 logits dropped on the vector path
  float m = -INFINITY;
  if (vec) {
    for (int i = threadIdx.x; i < n / 4; i += blockDim.x) {
      const float4 q = reinterpret_cast<const float4*>(row)[i];
      m = fmaxf(m, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
    }
  } else {
    for (int v = threadIdx.x; v < n; v += blockDim.x) m = fmaxf(m, row[v]);
  }
  m = block_reduce_256(m, true);
  float s = 0.0f;
  for (int v = threadIdx.x; v < n; v += blockDim.x) s += expf(row[v] - m);
  s = block_reduce_256(s, false);
  for (int v = threadIdx.x; v < n; v += blockDim.x) out[v] = expf(row[v] - m) / s;
}

void vec4_no_tail_softmax(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  require_valid(B, V, 0, false);
  if (B == 0 || V == 0) return;
  vec4_no_tail_kernel<<<B, 256, 0, stream>>>(x, probs, V);
  CUDA_CHECK(cudaGetLastError());
}

enum class Serial { Pow2K, HigherIndexTies };

// grid (B), one working thread per row: a sorted list of k keys, insertion by shifting.
template <Serial kMistake>
__global__ void serial_topk_kernel(const float* x, float* values, int32_t* indices, int V, int k) {
  if (threadIdx.x != 0) return;
  const float* row = x + size_t(blockIdx.x) * V;
  Key best[kMaxK];
  for (int i = 0; i < k; ++i) best[i] = kNoKey;
  for (int v = 0; v < V; ++v) {
    // HigherIndexTies: the index itself in the low bits, so the HIGHER index wins a tie.
    const Key key = kMistake == Serial::HigherIndexTies ? (Key(ordered_bits(row[v])) << 32) | Key(uint32_t(v))
                                                        : make_key(row[v], v);
    int pos = 0;  // how many kept keys are larger
    if (kMistake == Serial::Pow2K) {
      for (int step = k / 2; step >= 1; step /= 2) {
        if (best[pos + step - 1] > key) pos += step;
      }
      if (best[pos] > key) ++pos;
    } else {
      pos = k;
      while (pos > 0 && best[pos - 1] < key) --pos;
    }
    if (pos >= k) continue;
    for (int i = k - 1; i > pos; --i) best[i] = best[i - 1];
    best[pos] = key;
  }
  for (int j = 0; j < k; ++j) {
    const int index = kMistake == Serial::HigherIndexTies ? int(uint32_t(best[j])) : key_index(best[j]);
    indices[size_t(blockIdx.x) * k + j] = index;
    values[size_t(blockIdx.x) * k + j] = row[index];
  }
}

void pow2_k_only(const float* x, float* values, int32_t* indices, int B, int V, int k, void*, cudaStream_t stream) {
  require_valid(B, V, k);
  serial_topk_kernel<Serial::Pow2K><<<B, 32, 0, stream>>>(x, values, indices, V, k);
  CUDA_CHECK(cudaGetLastError());
}

void higher_index_ties(const float* x, float* values, int32_t* indices, int B, int V, int k, void*,
                       cudaStream_t stream) {
  require_valid(B, V, k);
  serial_topk_kernel<Serial::HigherIndexTies><<<B, 32, 0, stream>>>(x, values, indices, V, k);
  CUDA_CHECK(cudaGetLastError());
}

// Checks k >= 1 and nothing else: k > V (or k > kMaxK) is launched, and the kernel's list of
// k keys runs past the row (and past its own array).
void forgets_k_above_v(const float* x, float* values, int32_t* indices, int B, int V, int k, void*,
                       cudaStream_t stream) {
  if (k < 1) throw std::invalid_argument("k = " + std::to_string(k) + ": k must be at least 1");
  serial_topk_kernel<Serial::HigherIndexTies><<<B, 32, 0, stream>>>(x, values, indices, V, k);
  CUDA_CHECK(cudaGetLastError());
}

constexpr int kThreads = 256, kWarps = kThreads / 32, kSplits = 8;

// block_merge of row_topk.cuh, with or without its barriers.
template <bool kBarriers>
__device__ void tree_merge(Key (&list)[kListRegs], Key* area) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  for (int r = 0; r < kListRegs; ++r) area[warp * kList + r * 32 + lane] = list[r];
  if (kBarriers) __syncthreads();
  for (int step = 1; step < kWarps; step <<= 1) {
    if (warp % (2 * step) == 0 && warp + step < kWarps) {
      Key other[kListRegs];
      for (int r = 0; r < kListRegs; ++r) other[r] = area[(warp + step) * kList + r * 32 + lane];
      merge_into(list, other);
      for (int r = 0; r < kListRegs; ++r) area[warp * kList + r * 32 + lane] = list[r];
    }
    if (kBarriers) __syncthreads();
  }
}

enum class Split { LosesTail, MissingBarrier };

// grid (splits, B): chunk s of each row -> its top-k keys and (m, s) in the workspace
// (splits == 1: straight to the outputs).
template <Split kMistake>
__global__ void split_kernel(const float* x, float* values, int32_t* indices, int V, int k, int chunk, Key* keys,
                             float2* stats) {
  __shared__ Key area[kWarps * kList];
  __shared__ Stats stats_area[kWarps];
  __shared__ Key floor;
  if (threadIdx.x == 0) floor = kNoKey;
  __syncthreads();
  const int s = blockIdx.x, b = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const float* row = x + size_t(b) * V;
  const int begin = min(V, s * chunk), end = min(V, begin + chunk);
  WarpTopK top(area + warp * kList, &floor, k);
  Stats st;
  scan_chunk<kThreads, 1, false>(row, begin, end, true, top, st);
  const Stats mine = block_stats<kWarps>(st, stats_area);
  tree_merge<kMistake != Split::MissingBarrier>(top.list, area);
  if (gridDim.x == 1) {
    if (warp == 0) write_topk(top.list, row, values + size_t(b) * k, indices + size_t(b) * k, k, true, mine);
    return;
  }
  if (warp == 0) {
    for (int r = 0; r < kListRegs; ++r) {
      if (r * 32 + lane < k) keys[(size_t(b) * gridDim.x + s) * kMaxK + r * 32 + lane] = top.list[r];
    }
  }
  if (threadIdx.x == 0) stats[size_t(b) * gridDim.x + s] = make_float2(mine.m, mine.s);
}

// grid (B), one warp: merges the row's partial lists and pairs, writes the result.
__global__ void merge_kernel(const float* x, float* values, int32_t* indices, int V, int k, int splits, const Key* keys,
                             const float2* stats) {
  const int b = blockIdx.x, lane = threadIdx.x;
  Key list[kListRegs] = {kNoKey, kNoKey};
  Stats all;
  for (int p = 0; p < splits; ++p) {
    Key other[kListRegs];
    for (int r = 0; r < kListRegs; ++r) {
      other[r] = r * 32 + lane < k ? keys[(size_t(b) * splits + p) * kMaxK + r * 32 + lane] : kNoKey;
    }
    merge_into(list, other);
    const float2 q = stats[size_t(b) * splits + p];
    all = merge(all, Stats{q.x, q.y});
  }
  write_topk(list, x + size_t(b) * V, values + size_t(b) * k, indices + size_t(b) * k, k, true, all);
}

template <Split kMistake>
void split_launch(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                  cudaStream_t stream) {
  require_valid(B, V, k);
  if (kMistake == Split::MissingBarrier) {
    split_kernel<kMistake><<<dim3(1, B), kThreads, 0, stream>>>(x, values, indices, V, k, V, nullptr, nullptr);
    CUDA_CHECK(cudaGetLastError());
    return;
  }
  const int chunk = (V / kSplits) / 4 * 4;  // the mistake: rounds DOWN, the tail is nobody's
  Key* keys = static_cast<Key*>(workspace);
  float2* stats = reinterpret_cast<float2*>(keys + size_t(B) * kSplits * kMaxK);
  split_kernel<kMistake><<<dim3(kSplits, B), kThreads, 0, stream>>>(x, values, indices, V, k, chunk, keys, stats);
  CUDA_CHECK(cudaGetLastError());
  merge_kernel<<<B, 32, 0, stream>>>(x, values, indices, V, k, kSplits, keys, stats);
  CUDA_CHECK(cudaGetLastError());
}

// grid (B): three passes, the max started at 0 instead of -inf. Shifting by any value is
// right in exact arithmetic, and with logits near 0 or above it the answer comes out right;
// a row whose every exp(x - 0) is 0 (all logits below about -88) has a zero sum, which the
// kernel answers with zeros, as for a row of -inf.
__global__ void max_from_zero_kernel(const float* x, float* probs, int V) {
  const float* row = x + size_t(blockIdx.x) * V;
  float* out = probs + size_t(blockIdx.x) * V;
  __shared__ float red[256];
  float m = 0.0f;  // should be -INFINITY
  for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, row[v]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = 128; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) sum += expf(row[v] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = 128; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  sum = red[0];
  for (int v = threadIdx.x; v < V; v += blockDim.x) out[v] = sum > 0.0f ? expf(row[v] - m) / sum : 0.0f;
}

void max_from_zero_softmax(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  require_valid(B, V, 0, false);
  max_from_zero_kernel<<<B, 256, 0, stream>>>(x, probs, V);
  CUDA_CHECK(cudaGetLastError());
}

// grid (B), one working thread per row, the row's start b * V in int: right until a row
// starts past element 2^31 (the large_rows inputs), which is then read from 8 GB before x.
__global__ void int_row_offset_kernel(const float* x, float* values, int32_t* indices, int V, int k) {
  if (threadIdx.x != 0) return;
  const int b = blockIdx.x;
  const float* row = x + b * V;  // should be size_t(b) * V
  Key best[kMaxK];
  for (int i = 0; i < k; ++i) best[i] = kNoKey;
  for (int v = 0; v < V; ++v) {
    const Key key = make_key(row[v], v);
    int pos = k;
    while (pos > 0 && best[pos - 1] < key) --pos;
    if (pos >= k) continue;
    for (int i = k - 1; i > pos; --i) best[i] = best[i - 1];
    best[pos] = key;
  }
  for (int j = 0; j < k; ++j) {
    indices[size_t(b) * k + j] = key_index(best[j]);
    values[size_t(b) * k + j] = row[key_index(best[j])];
  }
}

void int_row_offset_topk(const float* x, float* values, int32_t* indices, int B, int V, int k, void*,
                         cudaStream_t stream) {
  require_valid(B, V, k);
  int_row_offset_kernel<<<B, 32, 0, stream>>>(x, values, indices, V, k);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

WB_VARIANTS(ch07_broken, wb::Role::Broken) {
  using wb::Code;
  // An empty list holds no index: a kernel that lost part of a row may then read outside it.
  const std::vector<Code> wrongish = {Code::Wrong,   Code::Unwritten, Code::NaN, Code::Nondeterministic,
                                      Code::OobRead, Code::Fault};
  const auto scratch = [](const wb::Shape& s) { return workspace_bytes(s["B"]); };
  return {
      wb::variant("softmax/f32", "no_max_softmax", &no_max_softmax)
          .rejected_as({Code::NaN, Code::Wrong},
                       "exp(x) without subtracting the row's max: overflows at logits of 1e4"),
      wb::variant("topk/f32", "pow2_k_only", &pow2_k_only)
          .rejected_as({Code::Wrong}, "a binary search that is right only when k is a power of two"),
      wb::variant("topk/f32", "forgets_k_above_v", &forgets_k_above_v)
          .rejected_as({Code::AcceptedBadArgs}, "checks k >= 1 but launches k > V and k > 64"),
      wb::variant("topk/f32", "higher_index_ties", &higher_index_ties)
          .rejected_as({Code::Wrong}, "equal logits ordered by the higher index"),
      wb::variant("softmax_topk/f32", "loses_tail_chunk", &split_launch<Split::LosesTail>)
          .with_workspace(scratch)
          .rejected_as(wrongish, "chunks of floor(V / splits): the last partial chunk of a row is never read"),
      wb::variant("softmax_topk/f32", "merge_missing_barrier", &split_launch<Split::MissingBarrier>)
          .with_workspace(scratch)
          // On an H100 the warps reach the merge together and the answer comes out right, run
          // after run: the race pass (racecheck) is what catches it, as in the learner's loop.
          .rejected_as({Code::Wrong, Code::Unwritten, Code::NaN, Code::Nondeterministic, Code::Race},
                       "the warps' lists merged with no barrier between writing and reading them"),
      // Class: a vector path's tail, caught by the vector-tail shapes (V = 1002 and 32003).
      wb::variant("softmax/f32", "vector_path_drops_row_tail", &vec4_no_tail_softmax)
          .rejected_as({Code::Unwritten, Code::Wrong, Code::NaN},
                       "a float4 path on aligned rows over V / 4 * 4 logits: the last V % 4 are dropped"),
      // Right on every row with a logit above about -88; the far_below_zero inputs are not.
      wb::variant("softmax/f32", "max_from_zero", &max_from_zero_softmax)
          .rejected_as({Code::Wrong, Code::NaN}, "the row max started at 0, not -inf"),
      // Right below 2^31 logits; the large_rows inputs reach past it.
      wb::variant("topk/f32", "int_row_offset", &int_row_offset_topk)
          .rejected_as({Code::Fault, Code::OobRead, Code::Wrong, Code::NaN, Code::Unwritten},
                       "the row start b * V computed in int")
          .on({wb::Shape{{"B", 3}, {"V", 1000}, {"k", 5}}}),
  };
}

}  // namespace ch07::broken
