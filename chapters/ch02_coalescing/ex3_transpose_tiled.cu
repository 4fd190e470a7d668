// Exercise 3 — the fast transpose, through a tile in shared memory.
//
// A block loads a square tile of `in` with coalesced reads (threadIdx.x along a row),
// waits for the whole tile (__syncthreads), then writes the tile's transpose to `out` with
// coalesced writes (threadIdx.x again along a row — of `out` this time). The turn happens
// inside shared memory, where a column access is cheap if it avoids bank conflicts.
// Steps, each one timed by the benchmark: tile -> no bank conflicts -> several elements per
// thread -> vector loads. The target is the copy bandwidth (the `%meas` column).
// Tiles at the right and bottom edges are partial.
//
// What the tests check, and the outcome code a failure gets:
//   * out[c * rows + r] equal to in[r * cols + c], bit for bit [wrong]; every element of out
//     written, partial edge tiles too [unwritten]; nothing past its end [oob_write].
//   * rectangles of every kind, 1 x 1 to 2048 x 2049 (33 x 65, 1025 x 17, 2049 x 1021 ...),
//     multiples of 4 that are no multiple of 64 (60 x 68, 132 x 260: for a vector path), and
//     random ones; then the large case, 46344 x 46344 (offsets past 2^31).
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it `in` ends where
//     unmapped memory begins, so a load past its last element faults [oob_read].
//
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
