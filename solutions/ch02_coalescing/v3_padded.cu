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
// Run: build/ch02/bin/ch02_bench --impl=v3_padded,v2_smem_tiled,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch02::solution {
namespace {

template <class T, int kTile>
__global__ void __launch_bounds__(kTile* kTile)
    transpose_padded_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  static_assert(kTile * kTile <= 1024, "one thread per tile element: at most 1024 threads per block");
  static_assert(sizeof(T) <= 4 && 4 % sizeof(T) == 0, "the pad is one 4-byte bank word");
  constexpr int kPad = 4 / sizeof(T);
  __shared__ T tile[kTile][kTile + kPad];  // (kTile, kTile) piece of `in`; the pad column is never used

  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (r0 + ty < rows && c0 + tx < cols) tile[ty][tx] = in[static_cast<size_t>(r0 + ty) * cols + c0 + tx];
  __syncthreads();
  if (c0 + ty < cols && r0 + tx < rows) out[static_cast<size_t>(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}

template <class T>
void transpose_padded(const T* in, T* out, int rows, int cols, cudaStream_t stream) {
  constexpr int kTile = 32;
  if (rows == 0 || cols == 0) return;
  const dim3 block(kTile, kTile);
  const dim3 grid(ceil_div(cols, kTile), ceil_div(rows, kTile));
  transpose_padded_kernel<T, kTile><<<grid, block, 0, stream>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace

void v3_transpose_f32(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  transpose_padded(in, out, rows, cols, stream);
}

void v3_transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream) {
  transpose_padded(in, out, rows, cols, stream);
}

}  // namespace ch02::solution
