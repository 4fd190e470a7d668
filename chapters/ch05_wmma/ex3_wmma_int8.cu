// Exercise 3 — INT8 inputs, INT32 accumulation.
//
// Goal: D = A * B (+ C) with int8_t inputs and int32_t accumulators and output, exactly
// (integer sums have no rounding: every element must match). Start from exercise 2.
// What differs for INT8 fragments:
//   * the fragment element type is `signed char`, the accumulator `int`
//     (wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major>);
//   * ldm must be a multiple of 16 elements (16 bytes), and every fragment must still start
//     on a 32-byte boundary: 16 INT8 values are only 16 bytes, so the fragment 16 columns
//     into a plain row of a shared tile is misaligned. Keep each 16-column slice of a tile
//     as its own block ("panel") with rows padded to 32 bytes.
//   * INT8 tensor cores exist from sm_72; the tests run from sm_75.
//
// What the tests check, and the outcome code a failure gets:
//   * D equal to the exact integer result [wrong]: INT32 sums round nothing. Inputs of
//     +-127 / -128, and sums past 2^24 (K up to 4100), which an epilogue through float
//     would round.
//   * every element of D written [unwritten], nothing outside D [oob_write].
//   * exercise 2's shapes, with and without C; from sm_75 [skipped below it]. After
//     them the large cases, on sampled rows: 2048^3, and 150,001 x 32 x 16,384, whose A
//     passes 2^31 elements (i * K from row 131,072 on: offsets in 64 bits, size_t).
//   * the same bits on a repeated run [nondeterministic]: exact anyway, so a difference is
//     a race.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which A, B and C end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch05 -R ex3_wmma_int8
// Guide: docs/ch05-wmma.md, section "Exercise 3".
#include <mma.h>

#include "ch05.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch05 {
namespace {

using namespace nvcuda;

constexpr int kThreads = 128;

__global__ void wmma_int8_kernel(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D) {
  if constexpr (has_tensor_cores<int8_t>()) {
    // TODO: exercise 2's kernel with signed char fragments and int accumulators.
  }
}

}  // namespace

void student::wmma_int8(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                        cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch05_wmma/ex3_wmma_int8.cu");  // delete this line when you start

  if (M <= 0 || N <= 0) return;
  const dim3 grid(1, 1);  // TODO
  wmma_int8_kernel<<<grid, kThreads, 0, stream>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

}  // namespace ch05
