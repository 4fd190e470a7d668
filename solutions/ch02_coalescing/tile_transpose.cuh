// The tiled transpose of v2 and v3: v2 brings it in, v3 changes only the tile's row length
// (one spare 4-byte word per row), so the tile's use and the launch live here, once.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch02::solution {

inline constexpr int kTileEdge = 32;  // v2's and v3's tiles: 32 x 32 elements, a block of 32 x 32 threads

// One (kTile x kTile) tile of `in` transposed through `tile`, a __shared__ array whose rows
// are kTile elements or longer (v3's padding). The tile's origin in `in` is (r0, c0).
//   Read: thread (tx, ty) takes in[r0 + ty][c0 + tx]; a warp (one ty) reads along a row.
//   Write: the tile lands at (c0, r0) in `out`. Thread (tx, ty) writes out[c0 + ty][r0 + tx],
//   which is in[r0 + tx][c0 + ty] = tile[tx][ty]: a warp writes along a row of `out` and
//   reads down a column of the tile (v2's bank conflicts, which v3's padding removes).
template <class T, int kTile, int kRow>
__device__ __forceinline__ void transpose_tile(T (&tile)[kTile][kRow], const T* __restrict__ in, T* __restrict__ out,
                                               int rows, int cols) {
  static_assert(kTile * kTile <= 1024, "one thread per tile element: at most 1024 threads per block");
  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;  // the tile's origin in `in`
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (r0 + ty < rows && c0 + tx < cols) tile[ty][tx] = in[static_cast<size_t>(r0 + ty) * cols + c0 + tx];
  __syncthreads();
  if (c0 + ty < cols && r0 + tx < rows) out[static_cast<size_t>(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}

// Launches a tile-transpose kernel: one block of kTileEdge x kTileEdge threads per tile,
// partial tiles at the right and bottom.
template <class T>
void launch_tile_transpose(void (*kernel)(const T*, T*, int, int), const T* in, T* out, int rows, int cols,
                           cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 block(kTileEdge, kTileEdge);
  const dim3 grid(ceil_div(cols, kTileEdge), ceil_div(rows, kTileEdge));  // partial tiles at the right and bottom
  kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

// The two transposes of tile step `step` (v2, v3), each launching the step's kernel template
// kernel<T, kTileEdge> with launch_tile_transpose (as CH02_TRANSPOSE_STEP, ladder.cuh).
#define CH02_TILE_TRANSPOSE_STEP(step, kernel)                                                                       \
  void step##_transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {                  \
    launch_tile_transpose(kernel<float, kTileEdge>, in, out, rows, cols, stream);                                    \
  }                                                                                                                  \
  void step##_transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream) { \
    launch_tile_transpose(kernel<__nv_bfloat16, kTileEdge>, in, out, rows, cols, stream);                            \
  }

}  // namespace ch02::solution
