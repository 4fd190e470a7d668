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
// From tile_transpose.cuh (shared with v3, which pads the tile): transpose_tile (the read into
// the tile, the barrier, the transposed write, as drawn above), launch_tile_transpose and
// CH02_TILE_TRANSPOSE_STEP (the f32 and bf16 entry points).
//
// Run: build/ch02/bin/ch02_bench --impl=v2_smem_tiled,v1_naive,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "tile_transpose.cuh"

namespace ch02::solution {
namespace {

template <class T, int kTile>
__global__ void __launch_bounds__(kTile* kTile)
    transpose_tiled_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  __shared__ T tile[kTile][kTile];            // (kTile, kTile) piece of `in`, stored as read: tile[r][c]
  transpose_tile(tile, in, out, rows, cols);  // read rows into the tile, barrier, write its columns as rows
}

}  // namespace

CH02_TILE_TRANSPOSE_STEP(v2, transpose_tiled_kernel)

}  // namespace ch02::solution
