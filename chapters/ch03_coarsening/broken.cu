// Harness self-tests for chapter 3: reductions with the mistakes learners make. Each must be
// rejected by the same checks the learner's kernels meet, with the outcome code it declares
// (the harness generates one test per kernel: ctest --preset ch03-solution -R broken). If one
// of these tests fails, the harness has gone soft, not the kernel.
#include <cfloat>
#include <cmath>

#include <algorithm>

#include "ch03.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch03 {
namespace {

using wb::Code;

constexpr int kThreads = 256;

// The combines of the trees below: a += b, a = max(a, b).
struct AddTo {
  __device__ __forceinline__ void operator()(float& a, float b) const { a += b; }
};
struct MaxInto {
  __device__ __forceinline__ void operator()(float& a, float b) const { a = fmaxf(a, b); }
};

// tile[0] = tile[0] combined with tile[1] ... tile[kThreads - 1]: the shared-memory tree, with a
// barrier after every step. Every thread of the block calls it once the tile is filled.
template <class Op>
__device__ __forceinline__ void tree_reduce(float* tile, int t, Op op) {
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) op(tile[t], tile[t + s]);
    __syncthreads();
  }
}
// tile[t] = v for every thread t, a barrier, then the tree.
template <class Op>
__device__ __forceinline__ void fill_and_reduce(float* tile, int t, float v, Op op) {
  tile[t] = v;
  __syncthreads();
  tree_reduce(tile, t, op);
}

// partials[b] = the sum of x[b * 256, (b + 1) * 256), with every barrier in place.
__global__ void block_sum_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  fill_and_reduce(tile, t, i < n ? x[i] : 0.0f, AddTo{});
  if (t == 0) partials[blockIdx.x] = tile[0];
}

// The same, without the barrier between filling the tile and the first step of the tree:
// threads 0..127 read tile[t + 128] whether or not warps 4..7 have stored it yet (their
// loads from DRAM may still be on the way), and pick up whatever an earlier block left
// there. Whether a block gets it wrong depends on timing, so the result changes from run
// to run. compute-sanitizer --tool racecheck reports the hazard.
__global__ void racy_block_sum_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  tile[t] = i < n ? x[i] : 0.0f;
  // missing: __syncthreads();
  tree_reduce(tile, t, AddTo{});
  if (t == 0) partials[blockIdx.x] = tile[0];
}

// *out = partials[0] + ... + partials[count - 1], one block (count may be 0).
__global__ void finish_kernel(const float* partials, int count, float* out) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = t; i < count; i += kThreads) v += partials[i];
  fill_and_reduce(tile, t, v, AddTo{});
  if (t == 0) *out = tile[0];
}

size_t partials_workspace(int n) { return sizeof(float) * (n / kThreads + 1); }

// kernel on `blocks` blocks (none when blocks is 0), each writing its block's partial to the
// workspace, then finish_kernel's one block adding the partials into *out.
using PartialsKernel = void(const float* x, int n, float* partials);
void partials_then_finish(PartialsKernel* kernel, int blocks, const float* x, int n, float* out, void* ws,
                          cudaStream_t s) {
  float* partials = static_cast<float*>(ws);
  if (blocks > 0) kernel<<<blocks, kThreads, 0, s>>>(x, n, partials);
  WB_CHECK_LAUNCH();
  finish_kernel<<<1, kThreads, 0, s>>>(partials, blocks, out);
  WB_CHECK_LAUNCH();
}

void racy_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  partials_then_finish(racy_block_sum_kernel, (n + kThreads - 1) / kThreads, x, n, out, ws, s);
}

// Rounds the grid down: the last n % 256 elements are never read.
void drop_tail_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  partials_then_finish(block_sum_kernel, n / kThreads, x, n, out, ws, s);
}

// `i <= n`: one element too many, the first past the end of x (the harness's NaN there).
__global__ void one_past_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  fill_and_reduce(tile, t, i <= n ? x[i] : 0.0f, AddTo{});
  if (t == 0) partials[blockIdx.x] = tile[0];
}
void one_past_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  partials_then_finish(one_past_kernel, n / kThreads + 1, x, n, out, ws, s);  // (always >= 1 block)
}

// Max with 0 as the starting value instead of -infinity: right only when some value is > 0.
__global__ void max_from_zero_kernel(const float* x, int n, float* out) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = t; i < n; i += kThreads) v = fmaxf(v, x[i]);
  fill_and_reduce(tile, t, v, MaxInto{});
  if (t == 0) *out = tile[0];
}
void max_from_zero(const float* x, int n, float* out, void*, size_t, cudaStream_t s) {
  max_from_zero_kernel<<<1, kThreads, 0, s>>>(x, n, out);
  WB_CHECK_LAUNCH();
}

// One pass with a last-block finish whose counter is never reset: the first call is right,
// and in the second no block draws the last ticket, so nothing writes *out.
__global__ void no_reset_kernel(const float* x, int n, float* out, unsigned* counter, float* partials) {
  __shared__ float tile[kThreads];
  __shared__ bool is_last;
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = blockIdx.x * kThreads + t; i < n; i += gridDim.x * kThreads) v += x[i];
  fill_and_reduce(tile, t, v, AddTo{});
  if (t == 0) {
    partials[blockIdx.x] = tile[0];
    __threadfence();
    is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last && t == 0) {
    __threadfence();
    float total = 0.0f;
    for (unsigned b = 0; b < gridDim.x; ++b) total += __ldcg(partials + b);
    *out = total;  // missing: *counter = 0;
  }
}
constexpr int kNoResetBlocks = 64;
size_t no_reset_workspace(int) { return 256 + kNoResetBlocks * sizeof(float); }
void no_reset_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  auto* base = static_cast<unsigned char*>(ws);
  no_reset_kernel<<<kNoResetBlocks, kThreads, 0, s>>>(x, n, out, reinterpret_cast<unsigned*>(base),
                                                      reinterpret_cast<float*>(base + 256));
  WB_CHECK_LAUNCH();
}

// Loads before the bounds check (volatile: the load cannot be moved inside the test, as a
// compiler may do with a plain one). Elements past n are loaded and then replaced by 0, so
// the sum is right, but the last block reads up to 255 floats past the end of x.
__global__ void early_load_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  const volatile float* vx = x;
  const float v = vx[i];
  fill_and_reduce(tile, t, i < n ? v : 0.0f, AddTo{});
  if (t == 0) partials[blockIdx.x] = tile[0];
}
void reads_past_end_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  // (n = 0 launches no early_load_kernel: x is empty)
  partials_then_finish(early_load_kernel, (n + kThreads - 1) / kThreads, x, n, out, ws, s);
}

// Block partials added into one float of the workspace with atomicAdd, then copied to *out;
// the accumulator is never set back to zero, so the second call returns the sum of both
// calls' inputs.
__global__ void accumulate_kernel(const float* x, int n, float* total) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  const int i = blockIdx.x * kThreads + t;
  fill_and_reduce(tile, t, i < n ? x[i] : 0.0f, AddTo{});
  if (t == 0) atomicAdd(total, tile[0]);
}
__global__ void copy_total_kernel(const float* total, float* out) { *out = *total; }
size_t accumulator_workspace(int) { return 256; }
void never_zeroed_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  float* total = static_cast<float*>(ws);
  // missing: cudaMemsetAsync(total, 0, sizeof(float), s);
  const int blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 0) accumulate_kernel<<<blocks, kThreads, 0, s>>>(x, n, total);
  WB_CHECK_LAUNCH();
  copy_total_kernel<<<1, 1, 0, s>>>(total, out);
  WB_CHECK_LAUNCH();
}

// Row sums, one thread per row, whose bound lets r == rows through: that thread writes a 0
// one element past the end of out.
__global__ void row_sum_one_past_kernel(const float* x, int rows, int cols, float* out) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r > rows) return;  // should be r >= rows
  float s = 0.0f;
  for (int c = 0; r < rows && c < cols; ++c) s += x[static_cast<size_t>(r) * cols + c];
  out[r] = s;
}
void row_sum_writes_past_end(const float* x, int rows, int cols, float* out, void*, size_t, cudaStream_t s) {
  row_sum_one_past_kernel<<<rows / kThreads + 1, kThreads, 0, s>>>(x, rows, cols, out);
  WB_CHECK_LAUNCH();
}

// A grid-stride loop in int: i += gridDim.x * blockDim.x passes 2^31 for the threads whose
// last element lies within one stride of n = 2^31 - 1 (the large case): i wraps negative,
// stays below n, and the loop reads 8 GB before x.
constexpr int kIntStrideBlocks = 1024;
__global__ void int_stride_kernel(const float* x, int n, float* partials) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  float v = 0.0f;
  for (int i = blockIdx.x * kThreads + t; i < n; i += gridDim.x * kThreads) v += x[i];  // should be int64_t
  fill_and_reduce(tile, t, v, AddTo{});
  if (t == 0) partials[blockIdx.x] = tile[0];
}
size_t int_stride_workspace(int) { return sizeof(float) * kIntStrideBlocks; }
void int_stride_sum(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  partials_then_finish(int_stride_kernel, kIntStrideBlocks, x, n, out, ws, s);
}

// A persistent sum: as many blocks as fit on the GPU at once, each looping over chunks of
// 1,024 elements; per chunk a block reduction (warp sums through shared memory, then warp 0
// adds them up) whose total thread 0 keeps. The barrier at the end of each iteration is
// missing: a warp that runs ahead writes its next warp sum while warp 0 still reads this
// one. On a shape where every block loops (the race shapes) the race pass sees it.
__global__ void persistent_no_end_barrier_kernel(const float* x, int n, float* partials) {
  __shared__ float warp_sums[kThreads / 32];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  float total = 0.0f;
  for (int64_t base = int64_t{blockIdx.x} * 4 * kThreads; base < n; base += int64_t{gridDim.x} * 4 * kThreads) {
    float v = 0.0f;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = base + k * kThreads + t;
      if (i < n) v += x[i];
    }
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
      float w = lane < kThreads / 32 ? warp_sums[lane] : 0.0f;
      for (int o = 16; o > 0; o /= 2) w += __shfl_down_sync(0xFFFFFFFFu, w, o);
      if (lane == 0) total += w;
    }
    // missing: __syncthreads();
  }
  if (t == 0) partials[blockIdx.x] = total;
}
int resident_grid() { return std::max(1, wb::blocks_per_gpu(persistent_no_end_barrier_kernel, kThreads)); }
size_t persistent_workspace(int) { return sizeof(float) * 4096; }
void persistent_no_end_barrier(const float* x, int n, float* out, void* ws, size_t, cudaStream_t s) {
  static const int resident = std::min(resident_grid(), 4096);  // >= 1
  partials_then_finish(persistent_no_end_barrier_kernel, resident, x, n, out, ws, s);
}

// Max with -FLT_MAX, the lowest finite float, as its starting value (and n = 0 answered
// -infinity by hand): right unless every element is -infinity, when it returns -FLT_MAX.
__global__ void max_from_lowest_kernel(const float* x, int n, float* out) {
  __shared__ float tile[kThreads];
  const int t = threadIdx.x;
  float v = -FLT_MAX;  // should be -INFINITY
  for (int i = t; i < n; i += kThreads) v = fmaxf(v, x[i]);
  fill_and_reduce(tile, t, v, MaxInto{});
  if (t == 0) *out = n == 0 ? -INFINITY : tile[0];
}
void max_from_lowest(const float* x, int n, float* out, void*, size_t, cudaStream_t s) {
  max_from_lowest_kernel<<<1, kThreads, 0, s>>>(x, n, out);
  WB_CHECK_LAUNCH();
}

// Row sums, one thread per row, with a 16-byte path where the row starts 16-byte aligned:
// cols / 4 float4 loads, and the cols % 4 elements after them forgotten (the scalar path, for
// rows that start unaligned, is right). Right whenever cols % 4 == 0; on a ragged row length
// the rows that happen to start aligned (every second or fourth row, wherever the matrix
// starts) lose their last elements, and with them the large tail marker the inputs put there.
__global__ void row_sum_vec4_no_tail_kernel(const float* x, int rows, int cols, float* out) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* p = x + static_cast<size_t>(r) * cols;
  float s = 0.0f;
  if (wb::aligned16(p)) {
    for (int v = 0; v < cols / 4; ++v) {
      const float4 q = reinterpret_cast<const float4*>(p)[v];
      s += q.x + q.y + q.z + q.w;
    }  // the mistake: no loop over the last cols % 4 elements
  } else {
    for (int c = 0; c < cols; ++c) s += p[c];
  }
  out[r] = s;
}
// kernel with a thread per row, in blocks of kThreads (no launch when rows is 0).
using RowKernel = void(const float* x, int rows, int cols, float* out);
void thread_per_row(RowKernel* kernel, const float* x, int rows, int cols, float* out, cudaStream_t s) {
  if (rows == 0) return;
  kernel<<<(rows + kThreads - 1) / kThreads, kThreads, 0, s>>>(x, rows, cols, out);
  WB_CHECK_LAUNCH();
}

void row_sum_vec4_no_tail(const float* x, int rows, int cols, float* out, void*, size_t, cudaStream_t s) {
  thread_per_row(row_sum_vec4_no_tail_kernel, x, rows, cols, out, s);
}

// Row sums, one thread per row, with the row's start r * cols in int: right until the
// rows past 2^31 elements (the large case), which are read from 8 GB before x.
__global__ void row_sum_int_offset_kernel(const float* x, int rows, int cols, float* out) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* p = x + r * cols;  // should be size_t(r) * cols
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += p[c];
  out[r] = s;
}
void row_sum_int_offset(const float* x, int rows, int cols, float* out, void*, size_t, cudaStream_t s) {
  thread_per_row(row_sum_int_offset_kernel, x, rows, cols, out, s);
}

}  // namespace

WB_VARIANTS(ch03_broken, wb::Role::Broken) {
  // A variant of each op, by name; a sum's workspace as `bytes(n)` asks (the partials' unless
  // the kernel keeps something else there).
  const auto sum = [](const char* name, ReduceFn* fn, size_t (*bytes)(int) = &partials_workspace) {
    return wb::variant("sum/f32", name, fn).with_workspace([bytes](const wb::Shape& s) {
      return bytes(static_cast<int>(s["n"]));
    });
  };
  const auto max_of = [](const char* name, ReduceFn* fn) { return wb::variant("max/f32", name, fn); };
  const auto rows = [](const char* name, RowSumFn* fn) { return wb::variant("row_sum/f32", name, fn); };
  const std::vector<Code> int_overflow = {Code::Fault, Code::OobRead, Code::OobWrite,
                                          Code::Wrong, Code::NaN,     Code::Unwritten};
  return {
      // Whether a block reads a tile slot before it is stored depends on timing: a wrong
      // result (or NaN from stale shared memory) when the race shows in the answer. Sums are
      // not required to give the same bits twice (an atomicAdd finish is accepted, spec.cu),
      // so a race that only moves the last bits is left to the race pass: racecheck must
      // report the hazard. The shapes all launch the racy kernel (n = 0 would not: the race
      // pass runs the smallest), from a handful of blocks to 2^24 + 3 elements.
      sum("missing_barrier", &racy_sum)
          .rejected_as({Code::Wrong, Code::NaN, Code::Race}, "no __syncthreads() after filling the tile")
          .on({wb::Shape{{"n", 1025}}, wb::Shape{{"n", 131071}}, wb::Shape{{"n", (int64_t{1} << 20) + 1}},
               wb::Shape{{"n", (int64_t{1} << 24) + 3}}}),
      // Right on multiples of 256: that is the trap.
      sum("drops_the_tail", &drop_tail_sum).rejected_as({Code::Wrong}, "grid rounded down"),
      // Uses x[n]: NaN where the harness's poison lies right after x, else whatever is there.
      sum("uses_one_past_end", &one_past_sum)
          .rejected_as({Code::NaN, Code::Wrong, Code::OobRead, Code::Fault}, "bounds check i <= n")
          .on({wb::Shape{{"n", 1000}}, wb::Shape{{"n", 1024}}, wb::Shape{{"n", 4097}}}),
      sum("reads_past_end", &reads_past_end_sum).rejected_as({Code::OobRead}, "loads before the bounds check"),
      // The first call is right; in the second no block draws the last ticket, so nothing
      // writes *out (the second call, not a determinism run, catches it).
      sum("counter_never_reset", &no_reset_sum, &no_reset_workspace)
          .rejected_as({Code::Unwritten, Code::Wrong, Code::Cached},
                       "the last block does not set the ticket counter back to zero"),
      // The second call adds its sum to the first call's: wrong there, from n = 1 on.
      sum("accumulator_never_zeroed", &never_zeroed_sum, &accumulator_workspace)
          .rejected_as({Code::Wrong, Code::Cached},
                       "a running total in the workspace is not zeroed before it is added to"),
      // Right only when some value is > 0: the max inputs are all negative.
      max_of("max_from_zero", &max_from_zero).rejected_as({Code::Wrong}, "starts from 0, not -infinity"),
      rows("writes_past_end", &row_sum_writes_past_end).rejected_as({Code::OobWrite}, "bound r <= rows"),
      // Class: 32-bit indices. Right below 2^31; the large cases wrap.
      sum("int_grid_stride", &int_stride_sum, &int_stride_workspace)
          .rejected_as(int_overflow, "a grid-stride loop whose index i += gridDim.x * blockDim.x is an int")
          .on({wb::Shape{{"n", 1000003}}, wb::Shape{{"n", (int64_t{1} << 31) - 1}}}),
      rows("int_row_offset", &row_sum_int_offset)
          .rejected_as(int_overflow, "the row start r * cols computed in int")
          .on({wb::Shape{{"rows", 1000}, {"cols", 65}}, wb::Shape{{"rows", 524800}, {"cols", 4100}}}),
      // Class: a vector path's tail. The fixed shapes with row lengths 1 to 3 past a multiple of
      // 4 (1001 x 1025, 1000 x 1026, 999 x 1027) catch it; the tail markers make it wrong.
      rows("vector_path_drops_row_tail", &row_sum_vec4_no_tail)
          .rejected_as({Code::Wrong}, "a float4 path on aligned rows that forgets the last cols % 4 elements"),
      // Class: a race only a looping block shows. Right answers on an H100, run after run; the
      // race pass (racecheck) on the race shapes, where every block loops, reports it.
      sum("persistent_missing_end_barrier", &persistent_no_end_barrier, &persistent_workspace)
          .rejected_as({Code::Race, Code::Wrong, Code::Nondeterministic},
                       "no __syncthreads() at the end of each iteration of a persistent block's loop")
          .on({wb::Shape{{"n", 9999991}}}),
      // Class: inputs at the edge of the range. Caught by the rows of -infinity.
      max_of("max_from_lowest_finite", &max_from_lowest)
          .rejected_as({Code::Wrong}, "starts from -FLT_MAX, not -infinity"),
  };
}

}  // namespace ch03
