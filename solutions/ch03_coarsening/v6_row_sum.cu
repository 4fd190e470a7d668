// v6 — row sums: out[r] = the sum of row r of a packed rows x cols matrix.
//
// One kernel shape does not fit 10^5 rows of 7 and one row of 10^6, so the launcher picks
// by the row length:
//
//   cols <= 64         a group of 8 lanes per row: 4 rows per warp, 32 rows per block.
//                      (A whole warp on a 7-element row would leave 25 lanes idle.)
//   64 < cols < 4096   a warp per row: lanes stride over the row, shuffles add up.
//   cols >= 4096       a block per row, v4's coarsened loop along the row. When there are
//                      fewer rows than blocks the GPU can run at once, each row is split
//                      over several blocks and v5's ticket finishes it (one counter per
//                      row in the workspace); 1 x 2^26 then runs like a full reduction.
//
// The group and warp kernels need no shared memory and no barrier: the tree is 3 or 5
// shuffles. They use float4 loads when every row starts 16-byte aligned (cols % 4 == 0),
// and scalar loads otherwise; the block kernel handles any alignment (coarsened.cuh).
//
// Run: build/ch03/bin/ch03_bench --impl=v6_row_sum,reference
#include "coarsened.cuh"
#include "ladder.cuh"

namespace ch03::solution {
namespace {

constexpr int kLongRow = 4096;  // from this many columns on: a block (or more) per row
constexpr int kShortRow = 64;   // up to this many: 8 lanes per row
constexpr int kFactor = 4;      // float4 loads in flight per thread, as in v5

// G lanes per row, kThreads / G rows per block.
template <int G>
__global__ void __launch_bounds__(kThreads)
    row_group_kernel(const float* __restrict__ x, int rows, int cols, bool aligned, float* __restrict__ out) {
  static_assert(G >= 2 && G <= 32 && (G & (G - 1)) == 0 && kThreads % G == 0, "a power-of-two group within a warp");
  const int row = blockIdx.x * (kThreads / G) + threadIdx.x / G;
  const int lane = threadIdx.x % G;
  float sum = 0.0f;
  if (row < rows) {
    const float* p = x + static_cast<size_t>(row) * cols;
    if (aligned) {  // (cols / 4) float4 per row
      const float4* p4 = reinterpret_cast<const float4*>(p);
      float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
      for (int c = lane; c < cols / 4; c += G) {
        const float4 v = __ldg(p4 + c);
        acc = make_float4(acc.x + v.x, acc.y + v.y, acc.z + v.z, acc.w + v.w);
      }
      sum = (acc.x + acc.y) + (acc.z + acc.w);
    } else {
#pragma unroll 4
      for (int c = lane; c < cols; c += G) sum += __ldg(p + c);
    }
  }
  // Every lane takes part in the shuffles, also those past the last row.
#pragma unroll
  for (int offset = G / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset, G);
  if (lane == 0 && row < rows) out[row] = sum;
}

// Block b works on row b / splits, share b % splits of it.
template <int F>
__global__ void __launch_bounds__(kThreads)
    row_block_kernel(const float* __restrict__ x, int cols, int splits, float* __restrict__ out, unsigned* counters,
                     float* partials) {
  __shared__ bool is_last;
  const int row = blockIdx.x / splits, part = blockIdx.x % splits;
  const float* p = x + static_cast<size_t>(row) * cols;
  float v = coarsened_partial<float, SumOp, F, kThreads>(p, cols, part, splits);
  v = block_reduce<SumOp, kThreads>(v);
  if (splits == 1) {
    if (threadIdx.x == 0) out[row] = v;
    return;
  }
  // Several blocks per row: v5's last-block finish, with one counter per row.
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;  // = partials[row * splits + part]
    __threadfence();
    is_last = atomicAdd(counters + row, 1u) == static_cast<unsigned>(splits - 1);
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  float total = 0.0f;
  for (int i = threadIdx.x; i < splits; i += kThreads)
    total += __ldcg(partials + static_cast<size_t>(row) * splits + i);
  total = block_reduce<SumOp, kThreads>(total);
  if (threadIdx.x == 0) {
    out[row] = total;
    counters[row] = 0;
  }
}

template <int G>
void launch_groups(const float* x, int rows, int cols, float* out, cudaStream_t stream) {
  const bool aligned = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  row_group_kernel<G><<<ceil_div(rows, kThreads / G), kThreads, 0, stream>>>(x, rows, cols, aligned, out);
  WB_CHECK_LAUNCH();
}

}  // namespace

// Counters and partials for split rows: splitting happens only when rows < the resident
// grid (<= kMaxBlocks), and then rows x splits < resident + rows <= 2 x kMaxBlocks.
size_t v6_row_workspace_bytes(int, int) { return workspace_bytes_for(kMaxBlocks, 2 * kMaxBlocks); }

void v6_row_sum(const float* x, int rows, int cols, float* out, void* ws, size_t ws_bytes, cudaStream_t stream) {
  if (rows == 0) return;
  if (cols <= kShortRow) return launch_groups<8>(x, rows, cols, out, stream);
  if (cols < kLongRow) return launch_groups<32>(x, rows, cols, out, stream);

  static const int resident = resident_blocks(row_block_kernel<kFactor>, kThreads);
  int splits = 1;
  if (rows < resident) {
    // Enough blocks to fill the GPU, but no share smaller than one float4 per thread.
    splits = std::clamp(ceil_div(resident, rows), 1, ceil_div(cols, kThreads * 4));
  }
  Workspace w{nullptr, nullptr};
  if (splits > 1) w = split_workspace(ws, ws_bytes, kMaxBlocks, 2 * kMaxBlocks, "v6_row_sum");
  row_block_kernel<kFactor><<<rows * splits, kThreads, 0, stream>>>(x, cols, splits, out, w.counters, w.partials);
  WB_CHECK_LAUNCH();
}

}  // namespace ch03::solution
