// Harness self-tests for chapter 9: linear-layer launchers with the mistakes learners make.
// Each must be rejected by the checks the learner's kernels meet; if one passes, the checks
// have gone soft.
//
//   launcher          mistake                                           caught by
//   gelu_erf          the erf GELU 0.5 v (1 + erf(v / sqrt 2)) instead  the FP32 forms, and in BF16
//                     of GPT-2's tanh form                              the gelu_tail inputs (v in
//                                                                       the negative tail, 10-80 %
//                                                                       apart)
//   bias_twice        b added to the sum, then again in the epilogue    every shape (b ~ U(-2, 2))
//   w_transposed      W read as [K, N] (W[k * N + n]), the Conv1D       values (even for square W)
//                     layout
//   tanh_from_exp     tanh(z) as (e^2z - 1) / (e^2z + 1): NaN once      the gelu_large inputs
//                     e^2z overflows (v above about 10)                 (|v| from 77 to 213)
//   fp32_vector_rule  16-byte loads of W's rows when K % 4 == 0 (the    K = 772, 4100 (rows 8-byte
//                     FP32 rule; BF16 needs K % 8 == 0)                 aligned): misaligned loads
//   int_row_offset    the row start n * K of W in int                   the large GEMV (W past
//                                                                       element 2^31)
//   w4_nibbles_swapped  INT4 codes read with each byte's nibbles      every shape (the layout: the
//                       swapped (the code of k % 8 < 4 taken from     low nibble holds k0 + b, the
//                       the high nibble)                              high one k0 + 4 + b)
//   w4_next_group_zero  the next group's zero point (g + 1) applied   rows of two or more groups
//                       to group g's codes                            (K > 128)
//
// One thread per output (the first solution step's loop), one mistake each.
#include <cuda_runtime.h>

#include "ch09.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch09::broken {
namespace {

enum class Mistake { GeluErf, BiasTwice, WTransposed, TanhFromExp, Fp32VectorRule, IntRowOffset };

// tanh through one exponential: right while e^2z is finite, NaN (inf / inf) past z of about 44.
__device__ __forceinline__ float gelu_tanh_from_exp(float v) {
  const float z = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  const float e = expf(2.0f * z);
  return 0.5f * v * (1.0f + (e - 1.0f) / (e + 1.0f));
}

__device__ __forceinline__ float f32(float v) { return v; }
__device__ __forceinline__ float f32(bf16 v) { return __bfloat162float(v); }
template <class T>
__device__ __forceinline__ T out(float v) {
  return T(v);
}
template <>
__device__ __forceinline__ bf16 out<bf16>(float v) {
  return __float2bfloat16(v);
}

// grid (ceil(N / 16), ceil(M / 16)), block (16, 16).
template <class T, Mistake kMistake>
__global__ void linear_kernel(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi) {
  const int n = blockIdx.x * 16 + threadIdx.x, m = blockIdx.y * 16 + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  if constexpr (kMistake == Mistake::Fp32VectorRule && sizeof(T) == 2) {
    if (K % 4 == 0) {  // should be K % 8 == 0 for 2-byte elements: 8 of them make 16 bytes
      const uint4* w4 = reinterpret_cast<const uint4*>(w + size_t(n) * K);
      const uint4* x4 = reinterpret_cast<const uint4*>(x + size_t(m) * K);
      for (int p = 0; p < K / 8; ++p) {
        const uint4 a = w4[p], c = x4[p];
        const T* pa = reinterpret_cast<const T*>(&a);
        const T* pc = reinterpret_cast<const T*>(&c);
        for (int e = 0; e < 8; ++e) acc += f32(pc[e]) * f32(pa[e]);
      }
      for (int k = K / 8 * 8; k < K; ++k) acc += f32(x[size_t(m) * K + k]) * f32(w[size_t(n) * K + k]);
    } else {
      for (int k = 0; k < K; ++k) acc += f32(x[size_t(m) * K + k]) * f32(w[size_t(n) * K + k]);
    }
  } else {
    const T* wrow = w + size_t(n) * K;
    if constexpr (kMistake == Mistake::IntRowOffset) wrow = w + n * K;  // should be size_t(n) * K: wraps past 2^31
    for (int k = 0; k < K; ++k) {
      const float wk = kMistake == Mistake::WTransposed ? f32(w[size_t(k) * N + n]) : f32(wrow[k]);
      acc += f32(x[size_t(m) * K + k]) * wk;
    }
  }
  if (epi != Epilogue::None) {
    acc += f32(b[n]);
    if (kMistake == Mistake::BiasTwice) acc += f32(b[n]);
  }
  if (epi == Epilogue::BiasGelu) {
    if (kMistake == Mistake::GeluErf)
      acc = 0.5f * acc * (1.0f + erff(acc * 0.70710678f));
    else if (kMistake == Mistake::TanhFromExp)
      acc = gelu_tanh_from_exp(acc);
    else
      acc = gelu_tanh(acc);
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

// --- INT4 weights (gemv_w4a16: the layout of ch09.cuh) --------------------------------------

enum class W4Mistake { NibblesSwapped, NextGroupsZero };

// grid (ceil(N / 256)), block (256): one thread per row, a loop over k.
template <W4Mistake kMistake>
__global__ void gemv_w4_kernel(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b,
                               bf16* y, int N, int K, Epilogue epi) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const int G = (K + kInt4Group - 1) / kInt4Group;
  const uint8_t* row = q + size_t(n) * (K / 2);
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    const int g = k / kInt4Group;
    int shift = int4_shift(k), zg = g;
    if constexpr (kMistake == W4Mistake::NibblesSwapped) shift = 4 - shift;  // should be int4_shift(k)
    if constexpr (kMistake == W4Mistake::NextGroupsZero) zg = (g + 1) % G;   // should be g
    const float w =
        (float((row[int4_byte_in_row(k)] >> shift) & 0xF) - float(zero[size_t(n) * G + zg])) * scale[size_t(n) * G + g];
    acc += __bfloat162float(x[k]) * w;
  }
  if (epi != Epilogue::None) acc += __bfloat162float(b[n]);
  if (epi == Epilogue::BiasGelu) acc = gelu_tanh(acc);
  y[n] = __float2bfloat16(acc);
}

template <W4Mistake kMistake>
void gemv_w4(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y, int N,
             int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  require_int4(K, scale, zero);
  if (K > 8192) throw std::invalid_argument("K = " + std::to_string(K) + ": at most 8192 (as the solution's)");
  gemv_w4_kernel<kMistake><<<(N + 255) / 256, 256, 0, stream>>>(x, q, scale, zero, b, y, N, K, epi);
  WB_CHECK_LAUNCH();
}

}  // namespace

WB_VARIANTS(ch09_broken, wb::Role::Broken) {
  using wb::Code;
  // Each mistake in words once; most are caught as wrong values.
  const char* gelu_erf = "the erf GELU instead of GPT-2's tanh form";
  const char* bias_twice = "the bias added twice";
  const char* w_transposed = "W read as [K, N], the Conv1D layout of the file";
  const auto wrong = [](const char* op, const char* name, auto* fn, const char* why) {
    return wb::variant(op, name, fn).rejected_as({Code::Wrong}, why);
  };
  return {
      wrong("linear_bias_gelu/f32", "gelu_erf", &linear<float, Mistake::GeluErf>, gelu_erf),
      wrong("gemv_bias_gelu/f32", "gelu_erf", &gemv<float, Mistake::GeluErf>, gelu_erf),
      wrong("linear_bias/bf16", "bias_twice", &linear<bf16, Mistake::BiasTwice>, bias_twice),
      wrong("gemv_bias/bf16", "bias_twice", &gemv<bf16, Mistake::BiasTwice>, bias_twice),
      wrong("linear_bias/bf16", "w_transposed", &linear<bf16, Mistake::WTransposed>, w_transposed),
      wrong("linear_bias_gelu/bf16", "w_transposed", &linear<bf16, Mistake::WTransposed>, w_transposed),
      // The learner's forms are BF16: the gelu_tail inputs tell the two GELUs apart there.
      wrong("linear_bias_gelu/bf16", "gelu_erf", &linear<bf16, Mistake::GeluErf>, gelu_erf)
          .on({wb::Shape{{"M", 17}, {"N", 129}, {"K", 64}}}),
      wrong("gemv_bias_gelu/bf16", "gelu_erf", &gemv<bf16, Mistake::GeluErf>, gelu_erf)
          .on({wb::Shape{{"N", 257}, {"K", 64}}}),
      // Right wherever |v| stays below about 10; the gelu_large inputs do not.
      wb::variant("gemv_bias_gelu/bf16", "tanh_from_exp", &gemv<bf16, Mistake::TanhFromExp>)
          .rejected_as({Code::NaN, Code::Wrong}, "tanh(z) = (e^2z - 1) / (e^2z + 1), which overflows")
          .on({wb::Shape{{"N", 257}, {"K", 64}}}),
      // Right wherever K % 8 == 0 or K % 4 != 0; K = 772 and 4100 make W's rows misaligned.
      wb::variant("gemv/bf16", "fp32_vector_rule", &gemv<bf16, Mistake::Fp32VectorRule>)
          .rejected_as({Code::Fault, Code::OobRead, Code::Wrong}, "16-byte loads of BF16 rows when K % 4 == 0"),
      // Right below 2^31 elements of W; the large GEMV reaches past it.
      wb::variant("gemv/bf16", "int_row_offset", &gemv<bf16, Mistake::IntRowOffset>)
          .rejected_as({Code::Fault, Code::OobRead, Code::Wrong, Code::NaN, Code::Unwritten},
                       "the row start n * K of W computed in int")
          .on({wb::Shape{{"N", 257}, {"K", 129}}, wb::Shape{{"N", 2797000}, {"K", 768}}}),
      // Right nowhere: every code of every byte is read from the other nibble.
      wrong("gemv_w4a16_bias/bf16", "w4_nibbles_swapped", &gemv_w4<W4Mistake::NibblesSwapped>,
            "INT4 codes read with each byte's nibbles swapped"),
      // Right where a row is one group (K <= 128); these rows have 6 and 13 (the last one short).
      wrong("gemv_w4a16_bias/bf16", "w4_next_group_zero", &gemv_w4<W4Mistake::NextGroupsZero>,
            "the next group's zero point applied to a group's codes")
          .on({wb::Shape{{"N", 257}, {"K", 768}}, wb::Shape{{"N", 31}, {"K", 1600}}}),
  };
}

}  // namespace ch09::broken
