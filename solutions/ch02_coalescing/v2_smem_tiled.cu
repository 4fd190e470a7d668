// v2 — a 32 x 32 tile in shared memory: coalesced on both global sides.
//
// What changes over v1: a block of 32 x 32 threads loads one 32 x 32 tile of `in`, row by
// row (a warp reads 32 neighbours of one row: coalesced), waits at __syncthreads(), and
// writes the transposed tile to `out` row by row (a warp writes 32 neighbours of one row of
// `out`: coalesced). The turn from rows to columns now happens inside shared memory.
//
// What is still slow: shared memory is 32 banks of 4 bytes; word w lives in bank w % 32.
// The write-out reads tile[tx][ty] for tx = 0..31 — a column, 32 words apart — so for FP32
// all 32 threads of the warp hit the same bank and the access is replayed 32 times
// (a 32-way bank conflict). For BF16 two elements share a word: a 16-way conflict.
// Nsight Compute shows it as l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum.
//
// Run: build/ch02/bin/ch02_bench --impl=v2_smem_tiled,v1_naive,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch02::solution {
namespace {

template <class T, int kTile>
__global__ void __launch_bounds__(kTile* kTile)
    transpose_tiled_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  static_assert(kTile * kTile <= 1024, "one thread per tile element: at most 1024 threads per block");
  __shared__ T tile[kTile][kTile];  // (kTile, kTile) piece of `in`, stored as read: tile[r][c]

  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;  // the tile's origin in `in`
  const int tx = threadIdx.x, ty = threadIdx.y;

  // Read: thread (tx, ty) takes in[r0 + ty][c0 + tx]; a warp (one ty) reads along a row.
  if (r0 + ty < rows && c0 + tx < cols) tile[ty][tx] = in[static_cast<size_t>(r0 + ty) * cols + c0 + tx];
  __syncthreads();

  // Write: the tile lands at (c0, r0) in `out`. Thread (tx, ty) writes out[c0 + ty][r0 + tx],
  // which is in[r0 + tx][c0 + ty] = tile[tx][ty]: a warp writes along a row of `out` and
  // reads down a column of the tile.
  if (c0 + ty < cols && r0 + tx < rows) out[static_cast<size_t>(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}

template <class T>
void transpose_tiled(const T* in, T* out, int rows, int cols, cudaStream_t stream) {
  constexpr int kTile = 32;
  if (rows == 0 || cols == 0) return;
  const dim3 block(kTile, kTile);
  const dim3 grid(ceil_div(cols, kTile), ceil_div(rows, kTile));  // partial tiles at the right and bottom
  transpose_tiled_kernel<T, kTile><<<grid, block, 0, stream>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace

void v2_transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  transpose_tiled(in, out, rows, cols, stream);
}

void v2_transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream) {
  transpose_tiled(in, out, rows, cols, stream);
}

}  // namespace ch02::solution
