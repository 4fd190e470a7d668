// Exercise 4 — the sum of every row of a rows x cols matrix.
//
// out[r] = the sum of row r, for shapes from 1 x 10^6 (one row: the whole GPU must work on
// it) to 10^5 x 7 (tiny rows: one thread, or a few lanes, per row). One kernel shape does
// not fit both: pick by cols. A warp per row suits short and medium rows (no shared memory,
// __shfl_down_sync does the tree); a block per row suits long rows, and a row longer than
// the GPU can take in one block is split over several blocks whose partials meet in the
// workspace. Rows start 16-byte aligned only when cols % 4 == 0.
//
// What the tests check, and the outcome code a failure gets:
//   * out[r] within a tolerance of the float64 row sum that grows with cols (exercise 1's
//     rule with cols for n) [wrong]; every row written, 0 when cols = 0 [unwritten]; no NaN
//     [nan]; nothing past out[rows - 1] [oob_write].
//   * shapes from 1 x 1,000,000 to 100,000 x 7 (1 x 1, 3 x 0, 65537 x 32, 4097 x 1025 ...)
//     and random ones; then the large case, 524800 x 4100 (r * cols passes 2^31). Rows
//     start 16-byte aligned only when cols % 4 == 0: a float4 load of a misaligned row
//     faults [fault].
//   * the same bits on every run are not required, as in exercise 1: a long row's partials
//     may meet through atomicAdd. A race is still caught, as a wrong sum or by the race
//     pass [race].
//   * all work on `stream` [outside_stream].
//   * a second call, same workspace, new inputs [cached]: per-row counters back at 0; x ends
//     where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch03 -R ex4_row_sum
// Guide: docs/ch03-coarsening.md, section "Exercise 4".
#include "ch03.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch03 {
namespace {

constexpr int kThreads = 256;

__global__ void row_sum_kernel(const float* x, int rows, int cols, float* out) {
  // TODO: which row is this warp's (or this block's)? Sum it, one lane writes out[row].
}

}  // namespace

// Scratch for row_sum of rows x cols (0: none needed).
size_t student::row_workspace_bytes(int rows, int cols) {
  (void)rows, (void)cols;
  return 0;
}

void student::row_sum(const float* x, int rows, int cols, float* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch03_coarsening/ex4_row_sum.cu");  // delete this line when you start

  (void)workspace, (void)workspace_bytes;
  const int blocks = 1;  // TODO: cover every row
  row_sum_kernel<<<blocks, kThreads, 0, stream>>>(x, rows, cols, out);
  WB_CHECK_LAUNCH();
}

}  // namespace ch03
