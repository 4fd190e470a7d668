// Chapter 3 — thread coarsening: the interface between your reductions and the harness.
//
// You write the launchers declared in namespace ch03::student, one exercise per file:
//   ex1_sum.cu        FP32 sum of an array (and workspace_bytes, shared by ex1..ex3)
//   ex2_max.cu        FP32 max of an array
//   ex3_sum_bf16.cu   BF16 array, FP32 accumulate
//   ex4_row_sum.cu    the sum of every row of a matrix (and row_workspace_bytes)
// Each launcher receives device pointers and a stream, launches its kernel(s) on that
// stream and checks each launch. Nothing else in the chapter needs to change: spec.cu
// declares how each op is checked and timed, variants.cu lists your launchers.
//
// Conventions
//   * x is packed and row-major; pointers come from cudaMalloc (256-byte aligned).
//   * The result is written by your kernel(s) into device memory: one float for a full
//     reduction, one float per row for row_sum. The harness fills it with a NaN "poison"
//     first, so a launcher that writes nothing is caught.
//   * Empty input: the sum of no elements is 0 and the max of no elements is -infinity
//     (the identity of each operation). A launcher must still write its output when n = 0,
//     and row_sum must write 0 for every row when cols = 0. An empty x may be a null
//     pointer: read nothing from it.
//   * x may hold -infinity (a masked value): the max of elements that are all -infinity is
//     -infinity, so the max starts from -INFINITY, never from -FLT_MAX.
//   * n and rows * cols go up to 2^31 - 1 and past it: compute indices and row offsets in
//     64 bits (size_t, int64_t); an int wraps.
//   * Accumulate in FP32 (also for BF16 input). The harness compares with a float64 sum on
//     the CPU; the tolerance grows with the length (wb::tolerance_for(F32, n)). The max is
//     compared exactly: no rounding happens in a max.
//
// Workspace (scratch device memory for partial results and counters)
//   No launcher may allocate: allocation inside a timed launcher would be timed, and it
//   serialises the GPU. Instead each set of kernels says how much scratch it needs, through
//   workspace_bytes(n) and row_workspace_bytes(rows, cols), and the harness passes that much
//   to every call, with its size.
//   * The harness zero-fills the workspace once, when it allocates it, and hands the same
//     workspace to every later call of the same launcher (a benchmark calls it thousands of
//     times). A launcher may use it freely, but whatever it needs to find zeroed on its next
//     call (a counter of finished blocks, say) it must set back to zero before it finishes.
//     The tests run each launcher several times on one workspace to check exactly that.
//   * A size of 0 is allowed; the pointer is then null.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace ch03 {

// *out = x[0] + x[1] + ... + x[n-1], FP32 accumulate (0 when n = 0).     (ex1)
// *out = max(x[0], ..., x[n-1])                 (-infinity when n = 0).   (ex2)
using ReduceFn = void(const float* x, int n, float* out, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// *out = x[0] + ... + x[n-1] for BF16 x, converted to FP32 and accumulated in FP32.  (ex3)
using ReduceBf16Fn = void(const __nv_bfloat16* x, int n, float* out, void* workspace, size_t workspace_bytes,
                          cudaStream_t stream);

// out[r] = x[r * cols + 0] + ... + x[r * cols + cols - 1] for 0 <= r < rows.         (ex4)
// The shapes range from one very long row (1 x 2^26) to a million rows of 32.
using RowSumFn = void(const float* x, int rows, int cols, float* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream);

// Workspace bytes a set of launchers needs: for sum_f32, max_f32 and sum_bf16 of n
// elements (the most any of the three needs), and for row_sum of rows x cols.
using WorkspaceFn = size_t(int n);
using RowWorkspaceFn = size_t(int rows, int cols);

namespace student {
ReduceFn sum_f32;
ReduceFn max_f32;
ReduceBf16Fn sum_bf16;
WorkspaceFn workspace_bytes;
RowSumFn row_sum;
RowWorkspaceFn row_workspace_bytes;
}  // namespace student

}  // namespace ch03
