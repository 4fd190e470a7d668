// v4 — a row split over many CTAs, merged by the last one to finish; tuned per shape.
//
// Over v3: with 1 to 64 rows, one CTA per row leaves most of the 132 SMs of an H100 idle,
// and a single CTA cannot pull a 500 KB row at anything near the chip's bandwidth. Here a
// row is cut into `splits` chunks, one CTA each (grid: splits x B). Each CTA runs v3's scan
// on its chunk and publishes its partial result into the workspace: its top-k keys (already
// sorted) and its (m, s) pair. The CTA that finishes last — it sees the row's counter reach
// splits - 1 — merges them: each warp folds a few partial lists into its own, the warps'
// lists are merged in a tree, the pairs are merged into the row's (M, S), and warp 0 writes
// the result. It then puts the counter back to 0 for the next call. No second kernel, no
// second launch: at batch 1 a launch costs about as much as reading the row.
//
// The right cut depends on the shape: batch 1 wants many CTAs per row, batch 256 one or
// two; wide CTAs hide latency, narrow ones merge faster. So the launcher asks the tuned
// config file (configs/ch07_<op>.json, written by build/ch07/bin/ch07_tune) for threads per
// CTA, CTAs per row and float4 loads per thread per batch, and falls back to a heuristic
// (about two CTAs per SM in total, chunks of at least 4096 logits) on GPUs never tuned.
//
// The full-probability form needs every logit again once (M, S) is known: a second small
// kernel reads the row and writes the probabilities (the logits are read twice).
//
// From row_topk.cuh: the keys, the online softmax pair, the probabilities kernel, and
// FormSpaces (the tunable space of each op); wb::with_constant (harness/runtime/launch_helpers.cuh)
// picks the kernel instance for the tuned values. From split_common.cuh: the workspace,
// finish_row (the row's (M, S) kept, its counter reset), launch_split_row (the chunks, the launch check, the
// probabilities pass) and CH07_SPLIT_STEP (the step's tunable spaces and its three top-k forms).
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v4_split_row
//      build/ch07/bin/ch07_tune   (sweeps the configs on this GPU)
#include <stdexcept>

#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "row_topk.cuh"
#include "split_common.cuh"
#include "tune/choose.cuh"

namespace ch07::solution {
namespace {

// grid (splits, B). Chunk s of row b is [s * chunk, min(V, (s + 1) * chunk)), chunk % 4 == 0.
template <int kThreads, int kVec, bool kVector>
__global__ void __launch_bounds__(kThreads)
    split_topk_kernel(const float* __restrict__ x, float* __restrict__ values, int32_t* __restrict__ indices, int V,
                      int k, int chunk, bool probabilities, bool with_stats, Workspace ws) {
  constexpr int kWarps = kThreads / 32;
  __shared__ Key area[kWarps * kList];
  __shared__ Stats stats_area[kWarps];
  __shared__ Key floor;
  __shared__ bool last;
  if (threadIdx.x == 0) floor = kNoKey;
  __syncthreads();

  const int s = blockIdx.x, b = blockIdx.y, splits = gridDim.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const float* row = x + size_t(b) * V;
  const int begin = min(V, s * chunk), end = min(V, begin + chunk);

  // 1. This CTA's chunk: its top-k in warp 0's list, its (m, s).
  WarpTopK top(area + warp * kList, &floor, k);
  Stats st;
  scan_chunk<kThreads, kVec, kVector>(row, begin, end, with_stats, top, st);
  const Stats mine = with_stats ? block_stats<kWarps>(st, stats_area) : Stats{};
  block_merge<kWarps>(top.list, area);

  if (splits == 1) {  // the whole row was ours
    if (warp == 0) write_topk(top.list, row, values + size_t(b) * k, indices + size_t(b) * k, k, probabilities, mine);
    if (threadIdx.x == 0 && with_stats) ws.row_stats[b] = make_float2(mine.m, mine.s);
    return;
  }

  // 2. Publish the partial result; the writes are fenced before the counter moves.
  Key* partial = ws.keys + (size_t(b) * kMaxSplits + s) * kMaxK;
  if (warp == 0) {
#pragma unroll
    for (int r = 0; r < kListRegs; ++r) {
      if (r * 32 + lane < k) partial[r * 32 + lane] = top.list[r];
    }
    __threadfence();
  }
  if (threadIdx.x == 0) {
    ws.stats[size_t(b) * kMaxSplits + s] = make_float2(mine.m, mine.s);
    __threadfence();
  }
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&ws.counters[b], 1u) == unsigned(splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();  // every other CTA's partial result is visible from here on

  // 3. The last CTA of the row merges the `splits` partial lists and pairs.
  const Key* row_keys = ws.keys + size_t(b) * kMaxSplits * kMaxK;
  Key list[kListRegs] = {kNoKey, kNoKey};
  for (int p = warp; p < splits; p += kWarps) {
    Key other[kListRegs];
#pragma unroll
    for (int r = 0; r < kListRegs; ++r) {
      other[r] = r * 32 + lane < k ? __ldcg(row_keys + size_t(p) * kMaxK + r * 32 + lane) : kNoKey;
    }
    merge_into(list, other);
  }
  block_merge<kWarps>(list, area);
  Stats all;
  if (with_stats) {
    Stats part;
    for (int p = threadIdx.x; p < splits; p += kThreads) {
      const float2 q = __ldcg(ws.stats + size_t(b) * kMaxSplits + p);
      part = merge(part, Stats{q.x, q.y});
    }
    all = block_stats<kWarps>(part, stats_area);
  }
  if (warp == 0) write_topk(list, row, values + size_t(b) * k, indices + size_t(b) * k, k, probabilities, all);
  finish_row(ws, b, with_stats, all);
}

// --- the tunable space -----------------------------------------------------------------------

wb::tune::Space make_space(const std::string& op) {
  wb::tune::Space s;
  s.name = "ch07_" + op;
  s.params = {{"threads", {128, 256, 512}, "threads per CTA"},
              {"splits", {1, 2, 4, 8, 16, 32, 64, 128}, "CTAs per row"},
              {"vec", {1, 2, 4}, "float4 loads per thread per batch"}};
  s.dims = {"B", "V"};
  s.problem = [](const wb::tune::Config& c, const wb::Shape& shape) -> std::optional<std::string> {
    if (c["splits"] > 1 && shape["V"] / c["splits"] < 4 * c["threads"]) {
      return "chunks of fewer than 4 logits per thread: too many CTAs per row for this V";
    }
    return std::nullopt;
  };
  s.heuristic = [](const wb::Shape& shape, const wb::tune::Facts& gpu) {
    const int64_t B = shape["B"], V = shape["V"];
    int64_t splits = 1;
    while (splits < kMaxSplits && splits * B < 2 * std::max(gpu.sms, 1)) splits *= 2;
    while (splits > 1 && V / splits < 4096) splits /= 2;
    return wb::tune::Config({{"threads", 256}, {"splits", splits}, {"vec", 2}});
  };
  return s;
}

template <int kThreads, int kVec>
void launch_split(dim3 grid, const float* x, float* values, int32_t* indices, int V, int k, int chunk,
                  bool probabilities, bool with_stats, const Workspace& ws, bool vector, cudaStream_t stream) {
  if (vector) {
    split_topk_kernel<kThreads, kVec, true>
        <<<grid, kThreads, 0, stream>>>(x, values, indices, V, k, chunk, probabilities, with_stats, ws);
  } else {
    split_topk_kernel<kThreads, kVec, false>
        <<<grid, kThreads, 0, stream>>>(x, values, indices, V, k, chunk, probabilities, with_stats, ws);
  }
}

template <int kThreads>
void launch_vec(int vec, dim3 grid, const float* x, float* values, int32_t* indices, int V, int k, int chunk,
                bool probabilities, bool with_stats, const Workspace& ws, bool vector, cudaStream_t stream) {
  const bool built = wb::with_constant<1, 2, 4>(vec, [&](auto n) {
    launch_split<kThreads, n.value>(grid, x, values, indices, V, k, chunk, probabilities, with_stats, ws, vector,
                                    stream);
  });
  if (!built) throw std::invalid_argument("vec = " + std::to_string(vec) + " is not built (1, 2 or 4)");
}

void launch(const wb::tune::Space& space, const float* x, float* probs, float* values, int32_t* indices, int B, int V,
            int k, bool probabilities, void* workspace, cudaStream_t stream) {
  require_valid(B, V, k);
  const wb::tune::Config c = wb::tune::choose(space, wb::Shape{{"B", B}, {"V", V}});
  const int splits = static_cast<int>(c["splits"]), threads = static_cast<int>(c["threads"]);
  const bool vector = V % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  launch_split_row(
      x, probs, B, V, splits, probabilities, vector, workspace, stream,
      [&](dim3 grid, int chunk, bool with_stats, const Workspace& ws) {
        const bool built = wb::with_constant<128, 256, 512>(threads, [&](auto n) {
          launch_vec<n.value>(int(c["vec"]), grid, x, values, indices, V, k, chunk, probabilities, with_stats, ws,
                              vector, stream);
        });
        if (!built) {
          throw std::invalid_argument("threads = " + std::to_string(threads) + " is not built (128, 256 or 512)");
        }
      });
}

}  // namespace

CH07_SPLIT_STEP(split, make_space, launch)

}  // namespace ch07::solution
