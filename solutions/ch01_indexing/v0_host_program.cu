// v0 — the whole program around a kernel: allocate, copy in, launch, check, copy out, free.
//
// The other steps of the ladder are launchers: the harness owns their memory. This one owns
// everything, as a first CUDA program does. Each call is checked; cudaMemcpy to the host
// waits for the kernel (it runs on the same, default stream), so no explicit synchronize
// is needed before reading host_c. (If a check throws half-way, the arrays allocated so far
// leak: the rest of the book holds device memory in RAII owners, cuda/buffers.cuh, for that
// reason.)
//
// Run: ctest --preset ch01-solution -R v0_host_program
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch01::solution {
namespace {

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

void v0_vector_add_program(const float* host_a, const float* host_b, float* host_c, int n) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, bytes));  // 1. device memory
  CUDA_CHECK(cudaMalloc(&b, bytes));
  CUDA_CHECK(cudaMalloc(&c, bytes));
  CUDA_CHECK(cudaMemcpy(a, host_a, bytes, cudaMemcpyHostToDevice));  // 2. inputs in
  CUDA_CHECK(cudaMemcpy(b, host_b, bytes, cudaMemcpyHostToDevice));
  const int threads = 256;
  const int blocks = (n + threads - 1) / threads;  // 3. launch, checked
  add_kernel<<<blocks, threads>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(host_c, c, bytes, cudaMemcpyDeviceToHost));  // 4. result out
  CUDA_CHECK(cudaFree(a));                                           // 5. free
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
}

}  // namespace ch01::solution
