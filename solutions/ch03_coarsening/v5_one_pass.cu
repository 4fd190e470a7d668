// v5 — one kernel: the last block to finish adds everyone's partials.
//
// What changes over v4: no second launch. Each block writes its partial to the workspace,
// makes it visible to the whole GPU (__threadfence), and takes a ticket from a counter in
// the workspace (atomicAdd). The block that draws the last ticket knows every partial is
// in place; it adds them, writes *out, and sets the counter back to 0 for the next call.
//
//   block 0: partial -> ws[0], fence, ticket 5   |
//   block 1: partial -> ws[1], fence, ticket 0   |  tickets come in any order;
//   ...                                          |  the block that draws gridDim.x - 1
//   block 5: partial -> ws[5], fence, ticket 7   |  finishes: *out = ws[0] + ... + ws[7],
//                                                   then counter = 0
//
// Why it is faster: a launch and the gap between two kernels cost a few microseconds,
// which is several percent of a 60-microsecond reduction of 256 MB; and the tail of the
// first kernel (SMs going idle one by one) now overlaps the finish instead of preceding a
// whole new kernel. The result is deterministic: the partials are always added in the
// same order, whichever block finishes last.
//
// Correctness of the hand-off: the fence orders "my partial is written" before "my ticket
// is taken", and the last block fences again before it reads, then reads the partials
// through L2 (__ldcg), so it never sees a stale copy in its SM's L1.
//
// Run: build/ch03/bin/ch03_bench --impl=v5_one_pass,reference
#include "coarsened.cuh"
#include "ladder.cuh"

namespace ch03::solution {
namespace {

constexpr int kFactor = 4;  // float4 loads in flight per thread: see v4's sweep in the docs

template <class T, class Op, int F>
__global__ void __launch_bounds__(kThreads)
    one_pass_kernel(const T* __restrict__ x, int n, float* __restrict__ out, unsigned* counter, float* partials) {
  __shared__ bool is_last;
  float v = coarsened_partial<T, Op, F, kThreads>(x, n, blockIdx.x, gridDim.x);
  v = block_reduce<Op, kThreads>(v);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    __threadfence();  // the partial is visible to every block before the ticket is
    is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();  // also separates the two block_reduce calls
  if (!is_last) return;

  __threadfence();  // every other block's partial was written before its ticket
  float total = Op::identity();
  for (int i = threadIdx.x; i < static_cast<int>(gridDim.x); i += kThreads) total = Op{}(total, __ldcg(partials + i));
  total = block_reduce<Op, kThreads>(total);
  if (threadIdx.x == 0) {
    *out = total;
    *counter = 0;  // every block has taken its ticket: ready for the next call
  }
}

template <class T, class Op>
void launch(const T* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream, const char* who) {
  static const int resident = resident_blocks(one_pass_kernel<T, Op, kFactor>, kThreads);
  const int blocks = std::clamp(ceil_div(n / 4, kThreads * kFactor), 1, resident);
  const Workspace w = split_workspace(ws, ws_bytes, 1, blocks, who);
  one_pass_kernel<T, Op, kFactor><<<blocks, kThreads, 0, stream>>>(x, n, out, w.counters, w.partials);
  WB_CHECK_LAUNCH();
}

}  // namespace

size_t v5_workspace_bytes(int) { return workspace_bytes_for(1, kMaxBlocks); }

void v5_sum_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  launch<float, SumOp>(x, n, out, ws, ws_bytes, stream, "v5_sum_f32");
}

void v5_max_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  launch<float, MaxOp>(x, n, out, ws, ws_bytes, stream, "v5_max_f32");
}

void v5_sum_bf16(const __nv_bfloat16* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  launch<__nv_bfloat16, SumOp>(x, n, out, ws, ws_bytes, stream, "v5_sum_bf16");
}

}  // namespace ch03::solution
