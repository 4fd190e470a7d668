// Exercise 3, written the slow way: right, but both GEMVs on the given stream.
#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

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

}  // namespace

void student::fork_join(const float* A1, const float* x1, float* y1, const float* A2, const float* x2, float* y2,
                        int m, int k, cudaStream_t stream) {
  gemv_kernel<<<m, 256, 0, stream>>>(A1, x1, y1, k);
  WB_CHECK_LAUNCH();
  gemv_kernel<<<m, 256, 0, stream>>>(A2, x2, y2, k);
  WB_CHECK_LAUNCH();
}

}  // namespace ch11
