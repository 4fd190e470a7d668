// Step 1 — one thread per output element (the GEMM) and one thread per output row (the
// GEMV), a plain loop over k, FP32 accumulate, the epilogue applied to the accumulator
// before the single store. Right for every shape; slow: each x and W element is read from
// global memory once per output that uses it (the GEMM), and in the GEMV neighbouring
// threads read addresses K elements apart, so no load is coalesced.
// Run: build/ch09/bin/ch09_bench --op=linear_bias_gelu/bf16
#include "runtime/errors.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

// grid (ceil(N / 16), ceil(M / 16)), block (16, 16): thread (tx, ty) owns y[m][n].
template <class T>
__global__ void linear_naive_kernel(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi) {
  const int n = blockIdx.x * 16 + threadIdx.x, m = blockIdx.y * 16 + threadIdx.y;
  if (m >= M || n >= N) return;
  const T* xr = x + size_t(m) * K;  // row m of x (K)
  const T* wr = w + size_t(n) * K;  // row n of W (K): W is [N, K]
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += to_float(xr[k]) * to_float(wr[k]);
  y[size_t(m) * N + n] = epilogue(acc, b, n, epi);
}

// grid (ceil(N / 128)), block (128): thread n owns y[n].
template <class T>
__global__ void gemv_naive_kernel(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const T* wr = w + size_t(n) * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += to_float(wr[k]) * to_float(x[k]);
  y[n] = epilogue(acc, b, n, epi);
}

}  // namespace

template <class T>
void linear_naive(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  linear_naive_kernel<T><<<dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16), 0, stream>>>(x, w, b, y, M, N, K, epi);
  WB_CHECK_LAUNCH();
}

template <class T>
void gemv_naive(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  gemv_naive_kernel<T><<<ceil_div(N, 128), 128, 0, stream>>>(x, w, b, y, N, K, epi);
  WB_CHECK_LAUNCH();
}

template void linear_naive<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int, int, Epilogue, cudaStream_t);
template void linear_naive<float>(const float*, const float*, const float*, float*, int, int, int, Epilogue,
                                  cudaStream_t);
template void gemv_naive<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int, Epilogue, cudaStream_t);
template void gemv_naive<float>(const float*, const float*, const float*, float*, int, int, Epilogue, cudaStream_t);

}  // namespace ch09::solution
