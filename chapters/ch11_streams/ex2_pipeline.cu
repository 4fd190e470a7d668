// Exercise 2 — a copy/compute pipeline over streams.
//
// Goal: y[i] = a * x[i] + b for 0 <= i < n, from the PINNED host array host_x to the pinned
// host array host_y, through the device arrays dev_x and dev_y. Done in one piece, the three
// steps run one after the other: copy in, kernel, copy out. A GPU has separate engines for
// copies to the device, copies from it, and kernels: cut the work into chunks and give the
// chunks to several streams, and the copy-in of chunk i+1, the kernel of chunk i and the
// copy-out of chunk i-1 run at once. The time tends to that of the slowest step alone.
//
//   fork:   record an event on `stream`; every stream of yours waits for it
//           (cudaEventRecord, cudaStreamWaitEvent): the harness puts the last part of host_x
//           there on `stream` right before calling you
//   chunks: chunk c on stream c % S: cudaMemcpyAsync in, kernel, cudaMemcpyAsync out
//   join:   record an event on each of your streams after its last chunk; `stream` waits for
//           each of them
// Create your streams once (cudaStreamCreateWithFlags(..., cudaStreamNonBlocking)) and your
// events once (cudaEventCreateWithFlags(..., cudaEventDisableTiming)), and keep them: creating
// them per call costs more than the copies of a small n. Never synchronize in here.
//
// What the tests check, and the outcome code a failure gets:
//   * host_y within a few FP32 roundings of a x + b [wrong]; every element written
//     [unwritten]; n = 1, 1000, 65537, 2^22 + 3, 2^24 + 7; then the large case, 2^28 (1 GiB each way).
//   * the fork: the call runs under stream capture; a stream of yours that does not wait for
//     `stream` runs at once, before the first elements of host_x have arrived, and reads
//     their poison [nan, outside_stream].
//   * the join: a stream of yours that `stream` does not wait for, or an event recorded on
//     the wrong stream (one that leaves a copy out of the join), ends the capture
//     [outside_stream].
//   * nothing on the legacy default stream, no synchronous copy, no synchronize, no
//     allocation [outside_stream]; a second call with new inputs [cached].
//
// Test:  cmake --preset ch11 && ctest --preset ch11 -R ex2_pipeline
// Bench: build/ch11/bin/ch11_overlap   (the overlap efficiency: slowest step alone / pipeline)
// Guide: docs/ch11-streams.md, section "Exercise 2".
#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

__global__ void axpb_kernel(const float* x, float* y, int64_t n, float a, float b) {
  // TODO: y[i] = a * x[i] + b for this thread's i < n.
}

}  // namespace

void student::pipeline(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                       cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch11_streams/ex2_pipeline.cu");  // delete this line when you start

  // The serial form, for a start: right, and no overlap at all. Make it a pipeline.
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  CUDA_CHECK(cudaMemcpyAsync(dev_x, host_x, bytes, cudaMemcpyHostToDevice, stream));
  axpb_kernel<<<1, 256, 0, stream>>>(dev_x, dev_y, n, a, b);  // TODO: enough blocks for n
  WB_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpyAsync(host_y, dev_y, bytes, cudaMemcpyDeviceToHost, stream));
}

}  // namespace ch11
