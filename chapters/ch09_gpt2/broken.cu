// Harness self-tests for chapter 9: linear-layer launchers with the mistakes learners make.
// Each must be rejected by the checks the learner's kernels meet; if one passes, the checks
// have gone soft.
//
//   launcher        mistake                                             caught by
//   gelu_erf        the erf GELU 0.5 v (1 + erf(v / sqrt 2)) instead    the FP32 forms (up to 5e-4
//                   of GPT-2's tanh form                                apart; BF16 rounds it away)
//   bias_twice      b added to the sum, then again in the epilogue      every shape (b ~ U(-2, 2))
//   w_transposed    W read as [K, N] (W[k * N + n]), the Conv1D layout  values (even for square W)
//
// One thread per output (the first solution step's loop), one mistake each.
#include <cuda_runtime.h>

#include "ch09.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch09::broken {
namespace {

enum class Mistake { GeluErf, BiasTwice, WTransposed };

__device__ __forceinline__ float f32(float v) { return v; }
__device__ __forceinline__ float f32(bf16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T out(float v) { return T(v); }
template <> __device__ __forceinline__ bf16 out<bf16>(float v) { return __float2bfloat16(v); }

// grid (ceil(N / 16), ceil(M / 16)), block (16, 16).
template <class T, Mistake kMistake>
__global__ void linear_kernel(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi) {
  const int n = blockIdx.x * 16 + threadIdx.x, m = blockIdx.y * 16 + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    const size_t wi = kMistake == Mistake::WTransposed ? size_t(k) * N + n : size_t(n) * K + k;
    acc += f32(x[size_t(m) * K + k]) * f32(w[wi]);
  }
  if (epi != Epilogue::None) {
    acc += f32(b[n]);
    if (kMistake == Mistake::BiasTwice) acc += f32(b[n]);
  }
  if (epi == Epilogue::BiasGelu) {
    acc = kMistake == Mistake::GeluErf ? 0.5f * acc * (1.0f + erff(acc * 0.70710678f)) : gelu_tanh(acc);
  }
  y[size_t(m) * N + n] = out<T>(acc);
}

template <class T, Mistake kMistake>
void linear(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  linear_kernel<T, kMistake><<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(x, w, b, y, M, N, K, epi);
  WB_CHECK_LAUNCH();
}

template <class T, Mistake kMistake>
void gemv(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream) {
  linear<T, kMistake>(x, w, b, y, 1, N, K, epi, stream);
}

}  // namespace

WB_VARIANTS(ch09_broken, wb::Role::Broken) {
  using wb::Code;
  return {
      wb::variant("linear_bias_gelu/f32", "gelu_erf", &linear<float, Mistake::GeluErf>)
          .rejected_as({Code::Wrong}, "the erf GELU instead of GPT-2's tanh form"),
      wb::variant("gemv_bias_gelu/f32", "gelu_erf", &gemv<float, Mistake::GeluErf>)
          .rejected_as({Code::Wrong}, "the erf GELU instead of GPT-2's tanh form"),
      wb::variant("linear_bias/bf16", "bias_twice", &linear<bf16, Mistake::BiasTwice>)
          .rejected_as({Code::Wrong}, "the bias added twice"),
      wb::variant("gemv_bias/bf16", "bias_twice", &gemv<bf16, Mistake::BiasTwice>)
          .rejected_as({Code::Wrong}, "the bias added twice"),
      wb::variant("linear_bias/bf16", "w_transposed", &linear<bf16, Mistake::WTransposed>)
          .rejected_as({Code::Wrong}, "W read as [K, N], the Conv1D layout of the file"),
      wb::variant("linear_bias_gelu/bf16", "w_transposed", &linear<bf16, Mistake::WTransposed>)
          .rejected_as({Code::Wrong}, "W read as [K, N], the Conv1D layout of the file"),
  };
}

}  // namespace ch09::broken
