// Exercise 3 — the fast transpose, through a tile in shared memory.
//
// A block loads a square tile of `in` with coalesced reads (threadIdx.x along a row),
// waits for the whole tile (__syncthreads), then writes the tile's transpose to `out` with
// coalesced writes (threadIdx.x again along a row — of `out` this time). The turn happens
// inside shared memory, where a column access is cheap if it avoids bank conflicts.
// Steps, each one timed by the benchmark: tile -> no bank conflicts -> several elements per
// thread -> vector loads. The target is the copy bandwidth (the `%meas` column).
// Tiles at the right and bottom edges are partial: the tests use 33 x 65, 1025 x 17 ...
// Test:  ctest --preset ch02 -R ex3_transpose_tiled
// Time:  build/ch02/bin/ch02_bench --impl=student,reference --op=transpose --dtype=f32
// Guide: docs/ch02-coalescing.md, section "Exercise 3".
#include "ch02.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch02 {
namespace {

constexpr int kTile = 32;

__global__ void transpose_tiled_kernel(const float* in, float* out, int rows, int cols) {
  // TODO: 0. a tile: __shared__ float tile[kTile][kTile];  is a column of it conflict-free?
  // TODO: 1. the tile's origin in `in` comes from (blockIdx.y, blockIdx.x);
  //          load it, bounds-checked, with threadIdx.x along the row.
  //       2. __syncthreads();
  //       3. the same tile's origin in `out` swaps the roles of blockIdx.x and blockIdx.y;
  //          store it, bounds-checked, with threadIdx.x along out's row.
}

}  // namespace

void student::transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch02_coalescing/ex3_transpose_tiled.cu");  // delete this line when you start

  const dim3 block(kTile, kTile);
  const dim3 grid(1, 1);  // TODO: one block per tile, tiles covering cols (x) and rows (y)
  transpose_tiled_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace ch02
