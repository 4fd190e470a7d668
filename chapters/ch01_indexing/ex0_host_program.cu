// Exercise 0 — a whole GPU program: from host arrays to host arrays.
//
// Goal: c[i] = a[i] + b[i] for 0 <= i < n, where a, b and c are HOST arrays (ordinary
// memory of this process). The GPU cannot read them, so the program does what every CUDA
// program does around its kernels:
//   1. allocate three device arrays             cudaMalloc
//   2. copy a and b to the device               cudaMemcpy(..., cudaMemcpyHostToDevice)
//   3. launch the kernel, check the launch      kernel<<<blocks, threads>>>(...); CUDA_CHECK(cudaGetLastError())
//   4. copy c back to the host                  cudaMemcpy(..., cudaMemcpyDeviceToHost)
//   5. free the three device arrays             cudaFree
// Wrap every CUDA call in CUDA_CHECK (cuda/errors.cuh): a failed call then stops with its
// name, file and line instead of going on with garbage. The harness checks c, and that no
// device memory is left allocated when you return.
//
// What the tests check, and the outcome code a failure gets:
//   * host_c for n = 1, 1025 and 2^22 + 3, each element within a few FP32 roundings of
//     a + b computed in float64 [wrong]; an element never copied back stays NaN [nan].
//   * every cudaMalloc freed before you return: at n = 2^22 + 3 (16 MB per array), device
//     memory still allocated afterwards fails the case [launch_error].
//   * a second call with new arrays, computed afresh [cached].
//   * no stream rule here: a whole program may use the default stream and synchronous
//     copies. From exercise 1 on, a launcher is given a stream and keeps to it.
//
// Test:  cmake --preset ch01 && ctest --preset ch01 -R ex0_host_program
// Guide: docs/ch01-indexing.md, section "Exercise 0".
#include "ch01.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch01 {
namespace {

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  // TODO: one element per thread, as in exercise 1 (and no write past n).
}

}  // namespace

void student::vector_add_program(const float* host_a, const float* host_b, float* host_c, int n) {
  WB_NOT_IMPLEMENTED("chapters/ch01_indexing/ex0_host_program.cu");  // delete this line when you start

  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  // TODO 1: CUDA_CHECK(cudaMalloc(&a, bytes)); and the same for b and c.
  // TODO 2: copy host_a into a and host_b into b.
  const int threads = 256;
  const int blocks = 1;  // TODO 3: enough blocks to cover n (round up)
  add_kernel<<<blocks, threads>>>(a, b, c, n);
  // TODO 3: check the launch.
  // TODO 4: copy c into host_c (cudaMemcpy waits for the kernel to finish first).
  // TODO 5: free a, b and c.
  (void)bytes, (void)host_a, (void)host_b, (void)host_c;
}

}  // namespace ch01
