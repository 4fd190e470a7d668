// Exercise 2 — the direct transpose: out[c * rows + r] = in[r * cols + c].
//
// One thread per element, no shared memory. Let threadIdx.x follow the input's columns, so
// a warp reads 32 neighbouring floats of one row (one coalesced access) — and then look at
// where those 32 threads write. The benchmark shows what that costs.
//
// What the tests check, and the outcome code a failure gets:
//   * out[c * rows + r] equal to in[r * cols + c], bit for bit [wrong]; every element of out
//     written [unwritten], nothing past its end [oob_write].
//   * rectangles of every kind, 1 x 1 to 2048 x 2049 (1 x 1000, 1000 x 1, 33 x 65, 1025 x 17,
//     2049 x 1021 ...), and random ones. Right only on squares fails. Then the large case,
//     46344 x 46344 (row * cols passes 2^31: 64-bit offsets).
//   * all work on `stream`: the launcher runs under stream capture, so a launch without the
//     stream argument, a synchronize, a cudaMalloc or a copy without Async fails
//     [outside_stream].
//   * a second call on the same buffers with new inputs [cached]; in it `in` ends where
//     unmapped memory begins, so a load past its last element faults [oob_read].
//
// Test:  ctest --preset ch02 -R ex2_transpose_naive
// Guide: docs/ch02-coalescing.md, section "Exercise 2".
#include "ch02.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch02 {
namespace {

__global__ void transpose_naive_kernel(const float* in, float* out, int rows, int cols) {
  // TODO: which (r, c) is this thread's? Check both bounds, then copy one element.
}

}  // namespace

void student::transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch02_coalescing/ex2_transpose_naive.cu");  // delete this line when you start

  const dim3 block(32, 8);
  const dim3 grid(1, 1);  // TODO: x covers the columns, y the rows (round up!)
  transpose_naive_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  WB_CHECK_LAUNCH();
}

}  // namespace ch02
