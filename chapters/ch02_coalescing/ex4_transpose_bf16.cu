// Exercise 4 — the tiled transpose on BF16 (2-byte) elements.
//
// The same kernel as exercise 3 with __nv_bfloat16 in place of float (a template on the
// element type serves both). A transpose only moves bits, so the result must be exact.
// Two things change with the element size: a warp's row of 32 elements is now 64 bytes, and
// two neighbouring elements share one 4-byte shared-memory bank — does your padding still
// remove the conflicts?
//
// What the tests check, and the outcome code a failure gets:
//   * out[c * rows + r] equal to in[r * cols + c], bit for bit [wrong]; every element of out
//     written [unwritten], nothing past its end [oob_write].
//   * the same shapes as exercise 3 (1 x 1 ... 2048 x 2049, 60 x 68 ...), and random ones;
//     then the large case, 46344 x 46344 (offsets past 2^31).
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it `in` ends where
//     unmapped memory begins, so a load past its last element faults [oob_read].
//
// Test:  ctest --preset ch02 -R ex4_transpose_bf16
// Guide: docs/ch02-coalescing.md, section "Exercise 4".
#include "ch02.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch02 {
namespace {

constexpr int kTile = 32;

__global__ void transpose_bf16_kernel(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols) {
  // TODO: 0. a tile: __shared__ __nv_bfloat16 tile[kTile][kTile];
  // TODO: as in exercise 3.
}

}  // namespace

void student::transpose_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int cols, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch02_coalescing/ex4_transpose_bf16.cu");  // delete this line when you start

  const dim3 block(kTile, kTile);
  const dim3 grid(1, 1);  // TODO
  transpose_bf16_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace ch02
