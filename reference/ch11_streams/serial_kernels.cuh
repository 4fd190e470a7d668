// The kernels of chapter 11's serial reference (serial.cu): y = a x + b, one GEMV block per
// row, and one step of the chain. The self-tests (chapters/ch11_streams/broken.cu) launch the
// same kernels, in the wrong places, so a rejection there is about the streams, never about
// the arithmetic.
//
// Each file that includes this gets its own copy (an unnamed namespace), as when each wrote
// them out.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ch11 {
namespace {

// y[i] = a x[i] + b, a grid-stride loop (x and y may be the same array).
__global__ void axpb_kernel(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = a * x[i] + b;
  }
}

// y[row] = A[row][:] . x, one block of 256 threads per row (A row-major, rows of k).
__global__ void gemv_kernel(const float* A, const float* x, float* y, int k) {
  __shared__ float partial[256];
  const float* row = A + static_cast<size_t>(blockIdx.x) * k;
  float acc = 0.0f;
  for (int j = threadIdx.x; j < k; j += blockDim.x) acc += row[j] * x[j];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = partial[0];
}

// Step s of the chain: out[i] = in[i] * w[s] + c.
__global__ void step_kernel(const float* in, float* out, const float* w, int s, int n, float c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * w[s] + c;
}

}  // namespace
}  // namespace ch11
