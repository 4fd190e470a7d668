// v3 — the v2 tile with one spare 4-byte word at the end of each row: no bank conflicts.
//
// What changes over v2: tile[kTile][kTile + kPad], where kPad elements make 4 bytes (1 float,
// 2 BF16). A tile row is now 33 words long (FP32), so going down a column moves 33 words:
// one bank further each row. The 32 threads reading a column hit 32 different banks and the
// read is served in one pass instead of 32. For BF16 a row is 17 words; 17 is odd, so a
// column again spreads over all 32 banks. Rows still start 4-byte aligned, and the
// row-wise writes into the tile stay conflict-free.
// The spare words cost 128 bytes of shared memory per tile and nothing else.
//
// From tile_transpose.cuh: v2's transpose_tile, launch_tile_transpose and
// CH02_TILE_TRANSPOSE_STEP; this file keeps only the padded tile.
//
// Run: build/ch02/bin/ch02_bench --impl=v3_padded,v2_smem_tiled,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "tile_transpose.cuh"

namespace ch02::solution {
namespace {

template <class T, int kTile>
__global__ void __launch_bounds__(kTile* kTile)
    transpose_padded_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  static_assert(sizeof(T) <= 4 && 4 % sizeof(T) == 0, "the pad is one 4-byte bank word");
  constexpr int kPad = 4 / sizeof(T);
  __shared__ T tile[kTile][kTile + kPad];     // (kTile, kTile) piece of `in`; the pad column is never used
  transpose_tile(tile, in, out, rows, cols);  // as v2, through the padded rows
}

}  // namespace

CH02_TILE_TRANSPOSE_STEP(v3, transpose_padded_kernel)

}  // namespace ch02::solution
