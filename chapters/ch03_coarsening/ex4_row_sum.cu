// Exercise 4 — the sum of every row of a rows x cols matrix.
//
// out[r] = the sum of row r, for shapes from 1 x 10^6 (one row: the whole GPU must work on
// it) to 10^5 x 7 (tiny rows: one thread, or a few lanes, per row). One kernel shape does
// not fit both: pick by cols. A warp per row suits short and medium rows (no shared memory,
// __shfl_down_sync does the tree); a block per row suits long rows, and a row longer than
// the GPU can take in one block is split over several blocks whose partials meet in the
// workspace. Rows start 16-byte aligned only when cols % 4 == 0.
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
