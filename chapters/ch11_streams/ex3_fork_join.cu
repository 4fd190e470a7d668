// Exercise 3 — fork/join: two independent kernels on two streams.
//
// Goal: y1 = A1 x1 and y2 = A2 x2, two GEMVs (A row-major m x k). Neither needs the other, and
// one GEMV of few rows leaves much of the GPU idle, so run them at once:
//   fork:  cudaEventRecord(fork, stream); cudaStreamWaitEvent(side, fork)
//   work:  GEMV 1 on `stream`, GEMV 2 on `side`
//   join:  cudaEventRecord(join, side); cudaStreamWaitEvent(stream, join)
// `side` is a stream of yours, created once with cudaStreamNonBlocking (a blocking stream
// also waits for the legacy default stream); the events once, with cudaEventDisableTiming.
//
// What the tests check, and the outcome code a failure gets:
//   * y1 and y2 within the FP32 error of a k-term sum [wrong]; every element written
//     [unwritten]; m x k = 1 x 1, 7 x 1000, 64 x 4097, 1025 x 129, 300 x 70001 and random.
//   * under stream capture: GEMV 2 on a side stream that does not wait for `stream` runs at
//     once and writes y2 before the graph of the call runs; not joined back (or the join
//     event recorded on `stream` instead of `side`), the capture fails; on the legacy
//     default stream, it runs at once too [outside_stream].
//   * a second call with new inputs [cached]; reads past A or x fault [oob_read].
//
// Test:  cmake --preset ch11 && ctest --preset ch11 -R ex3_fork_join
// Bench: build/ch11/bin/ch11_overlap   (fork/join against both GEMVs on one stream)
// Guide: docs/ch11-streams.md, section "Exercise 3".
#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

// One block per row: the block's threads share the row, then add their partial sums.
__global__ void gemv_kernel(const float* A, const float* x, float* y, int m, int k) {
  // TODO: row = blockIdx.x; each thread sums A[row][j] * x[j] over j = threadIdx.x, += blockDim.x;
  //       then a block sum (shared memory, or warp shuffles), and thread 0 writes y[row].
}

}  // namespace

void student::fork_join(const float* A1, const float* x1, float* y1, const float* A2, const float* x2, float* y2, int m,
                        int k, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch11_streams/ex3_fork_join.cu");  // delete this line when you start

  // Serial, for a start: both on `stream`. TODO: the second on a side stream, forked and joined.
  gemv_kernel<<<m, 256, 0, stream>>>(A1, x1, y1, m, k);
  WB_CHECK_LAUNCH();
  gemv_kernel<<<m, 256, 0, stream>>>(A2, x2, y2, m, k);
  WB_CHECK_LAUNCH();
}

}  // namespace ch11
