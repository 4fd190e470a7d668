// Exercise 1 — pinned staging and asynchronous copies: a whole program.
//
// Goal: y[i] = a * x[i] + b for 0 <= i < n, where host_x and host_y are PAGEABLE host arrays
// (ordinary memory: a std::vector's). The copy engines can only read and write PINNED
// (page-locked) memory; from pageable memory the driver copies through a hidden pinned
// buffer of its own, piece by piece, and the call waits. So the program keeps its own pinned
// staging and copies through it:
//   staging_create   cudaMallocHost `count` floats (the pinned buffer), cudaMalloc `count`
//                    floats (the device buffer), record count
//   staged_axpb      for each chunk of at most staging.count elements:
//                      1. copy the chunk of host_x into staging.pinned (std::memcpy)
//                      2. cudaMemcpyAsync(staging.device, staging.pinned, ..., stream)
//                      3. launch the kernel on `stream`, check the launch
//                      4. cudaMemcpyAsync(staging.pinned, staging.device, ..., stream)
//                      5. cudaStreamSynchronize(stream): the copy back is done only now
//                      6. copy the chunk out of staging.pinned into host_y
//   staging_destroy  cudaFreeHost and cudaFree, the pointers set to null
// Wrap every CUDA call in CUDA_CHECK.
//
// What the tests check, and the outcome code a failure gets:
//   * staging.pinned is pinned host memory and staging.device device memory
//     (cudaPointerGetAttributes), count as asked [pageable, launch_error].
//   * host_y is complete when staged_axpb returns, each element within a few FP32
//     roundings of a x + b computed in float64 [wrong]; an element never copied back
//     holds the poison [unwritten]. Step 5 forgotten, host_y gets what the staging held
//     before the copy back arrived [wrong, unwritten].
//   * the program copied through staging.pinned: a cudaMemcpyAsync straight from host_x
//     leaves it untouched [pageable].
//   * nothing waits on the legacy default stream: the harness holds it while the round trip
//     runs, so a cudaMemcpy without Async, a cudaDeviceSynchronize or a launch without the
//     stream stalls there for 2 s and fails [outside_stream].
//   * after staging_destroy, neither buffer is still allocated [launch_error].
//   * n = 1, 1000, 2^18 + 1 (one past a whole chunk: staging.count is 2^18) and 2^22 + 3.
//
// Test:  cmake --preset ch11 && ctest --preset ch11 -R ex1_pinned_staging
// Guide: docs/ch11-streams.md, section "Exercise 1".
#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

__global__ void axpb_kernel(float* v, int64_t n, float a, float b) {
  // TODO: v[i] = a * v[i] + b for this thread's i < n.
}

}  // namespace

Staging student::staging_create(size_t count) {
  WB_NOT_IMPLEMENTED("chapters/ch11_streams/ex1_pinned_staging.cu");  // delete this line when you start

  Staging s;
  s.count = count;
  // TODO: CUDA_CHECK(cudaMallocHost(&s.pinned, ...)); CUDA_CHECK(cudaMalloc(&s.device, ...));
  return s;
}

void student::staging_destroy(Staging& s) {
  // TODO: free both buffers (cudaFreeHost, cudaFree) and set the pointers to nullptr.
  (void)s;
}

void student::staged_axpb(const float* host_x, float* host_y, int64_t n, float a, float b, const Staging& s,
                          cudaStream_t stream) {
  for (int64_t at = 0; at < n; at += static_cast<int64_t>(s.count)) {
    const int64_t len = n - at < static_cast<int64_t>(s.count) ? n - at : static_cast<int64_t>(s.count);
    // TODO 1-6 above, for elements [at, at + len).
    axpb_kernel<<<1, 256, 0, stream>>>(s.device, len, a, b);  // TODO: enough blocks for len
    WB_CHECK_LAUNCH();
  }
  (void)host_x, (void)host_y;
}

}  // namespace ch11
