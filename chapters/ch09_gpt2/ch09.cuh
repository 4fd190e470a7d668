// Chapter 9 — a GPT-2 decoder built from the book's kernels: the interface between your
// kernels and the harness (and the model, models/gpt2/gpu/model.h, which runs them).
//
// You write the launchers declared in namespace ch09::student, one exercise per file:
//   ex1_linear_epilogue.cu   y = x · Wᵀ + b, and y = gelu_tanh(x · Wᵀ + b), in ONE kernel:
//                            the matmul with its epilogue fused (prefill: M tokens at once)
//   ex2_gemv.cu              the same for ONE token (M = 1): a GEMV that streams W once
//   ex3_block.cpp            one transformer block's forward, wired from the model's ops
//                            (host code; models/gpt2/gpu/ops.h)
//   ex4_decode_graph.cpp     the decode step captured as a CUDA Graph and replayed (host code)
// Exercises 1 and 2 are ops of the harness (tests and benchmark rows); 3 and 4 run inside
// the model (`build/ch09/bin/gpt2 ... --use=block:student,graph:student`).
//
// The data, as models/gpt2 loads a GPT-2 (every matrix [out, in], row-major):
//
//   x[m * K + k]     M rows (tokens) of K inputs            0 <= m < M, 0 <= k < K
//   W[n * K + k]     N output features of K inputs: W is [N, K], so y = x · Wᵀ
//   b[n]             one bias per output feature
//   y[m * N + n]     M rows of N outputs
//
//   y[m][n] = epilogue( sum_k x[m][k] * W[n][k] + b[n] )
//
// The epilogues (Epilogue below):
//   None        y = x · Wᵀ                (b is null: the LM head, logits = x · wteᵀ)
//   Bias        y = x · Wᵀ + b            (the QKV projection, both output projections)
//   BiasGelu    y = gelu_tanh(x · Wᵀ + b) (the MLP's first matmul), GPT-2's GELU:
//               gelu_tanh(v) = 0.5 v (1 + tanh( sqrt(2/pi) (v + 0.044715 v^3) ))
//               NOT the erf form 0.5 v (1 + erf(v / sqrt(2))): the two differ by up to
//               5e-4, which the FP32 tests see, and by 10 % to 80 % of the value in the
//               negative tail (v in [-3.7, -2.6]), which the BF16 tests see.
//
// The rules the tests hold you to:
//   * accumulate in FP32 (whatever T is), add the bias in FP32, apply GELU in FP32, round
//     ONCE to T when you store y.
//   * any M, N, K >= 1: primes, 1, 1025, 4097 ... are tested; your tiles will not divide
//     them. Every pointer is 16-byte aligned, but a ROW of x or W starts 16-byte aligned
//     only when K * sizeof(T) % 16 == 0: 16-byte loads need that check and a scalar path.
//   * N * K (the GEMV's W) and M * N (the linear layer's y) may pass 2^31: offsets in 64 bits.
//   * W is [N, K] (out, in). Reading it as [K, N] (the layout of Hugging Face's Conv1D
//     files, and of chapter 5's B) is the classic mistake; on square W it even "works" for
//     the shapes — the tests catch it by the values.
//   * y is poisoned (NaN) before your launcher runs and guard bands around it are checked.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch09 {

using bf16 = __nv_bfloat16;

enum class Epilogue { None, Bias, BiasGelu };
inline const char* epilogue_name(Epilogue e) {
  return e == Epilogue::None ? "none" : e == Epilogue::Bias ? "bias" : "bias_gelu";
}

// GPT-2's GELU (the tanh form), in FP32, for device code and host checks alike.
__host__ __device__ inline float gelu_tanh(float v) {
  const float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
}

// Throws std::invalid_argument naming the argument: M, N, K >= 1, and a bias exactly when
// the epilogue adds one. Call it first in every launcher.
inline void require_valid(int M, int N, int K, Epilogue epi, const void* b) {
  if (M < 1) throw std::invalid_argument("M = " + std::to_string(M) + ": at least one row of x (M >= 1)");
  if (N < 1) throw std::invalid_argument("N = " + std::to_string(N) + ": at least one output feature (N >= 1)");
  if (K < 1) throw std::invalid_argument("K = " + std::to_string(K) + ": at least one input feature (K >= 1)");
  if (epi != Epilogue::None && b == nullptr) {
    throw std::invalid_argument(std::string("b is null, but the epilogue '") + epilogue_name(epi) + "' adds a bias");
  }
}

// ex1: y (M, N) = epilogue(x (M, K) · W (N, K)ᵀ + b (N)). T is bf16 (the exercise) or float
// (the solution's and the library's FP32 model path).
template <class T>
using LinearFn = void(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream);

// ex2: the batch-1 form, y (N) = epilogue(W (N, K) · x (K) + b (N)).
template <class T>
using GemvFn = void(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream);

// INT8 weights (W8A16, the solution's v5_gemv_w8a16; no exercise): the same GEMV with W held
// as int8 q (N, K) and one FP32 scale per output row, W[n][k] ~ q[n][k] * scale[n]
// (models/gpt2/quantize.h):  y (N) = epilogue( scale[n] * sum_k x[k] * q[n][k] + b[n] ),
// x (K), b (N), y (N) in BF16, the sum in FP32.
using GemvW8Fn = void(const bf16* x, const int8_t* q, const float* scale, const bf16* b, bf16* y, int N, int K,
                      Epilogue epi, cudaStream_t stream);

// The fused decode step (the solution's v6_fused_decode; no exercise), one token at a time:
//
//   ln_gemv        h (C) = T(x + r), the new residual stream (r may be null: h = x);
//                  y (N) = epilogue( W (N, C) · LayerNorm(h) + b (N) ): the LayerNorm's FP32
//                  statistics over h AS ROUNDED, its output rounded to T (as chapter 6's
//                  kernel stores it) before the product. C <= 8192.
//   gemv_residual  y (N) = res (N) + W (N, K) · x (K) + b (N), rounded once: the block's
//                  residual add in the GEMV's epilogue (y may be res itself).
//   gemv_argmax    y (N) = W (N, K) · x (K), and the argmax of y AS STORED: its index and
//                  value, equal values going to the lower index (chapter 7's order). The
//                  workspace is zeroed once when allocated; a launcher leaves it as it found it.
//                  K <= 8192.
template <class T>
using LnGemvFn = void(const T* x, const T* r, const T* gamma, const T* beta, const T* w, const T* b, T* h, T* y, int N,
                      int C, Epilogue epi, float eps, cudaStream_t stream);
template <class T>
using GemvResidualFn = void(const T* x, const T* w, const T* b, const T* res, T* y, int N, int K, cudaStream_t stream);
template <class T>
using GemvArgmaxFn = void(const T* x, const T* w, T* y, int32_t* index, float* value, int N, int K, void* workspace,
                          cudaStream_t stream);

// ... and ln_gemv and gemv_residual on INT8 weights (W8A16, as GemvW8Fn): W held as int8 q and
// one FP32 scale per row, W[n][k] ~ q[n][k] * scale[n]; x, r, gamma, beta, b, res, h, y BF16:
//   ln_gemv_w8a16        y (N) = epilogue( scale[n] * (q (N, C) · LayerNorm(h))[n] + b[n] )
//   gemv_residual_w8a16  y (N) = res (N) + scale[n] * (q (N, K) · x (K))[n] + b (N)
using LnGemvW8Fn = void(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const int8_t* q,
                        const float* scale, const bf16* b, bf16* h, bf16* y, int N, int C, Epilogue epi, float eps,
                        cudaStream_t stream);
using GemvResidualW8Fn = void(const bf16* x, const int8_t* q, const float* scale, const bf16* b, const bf16* res,
                              bf16* y, int N, int K, cudaStream_t stream);

// INT4 weights (W4A16, the solution's v10_gemv_w4a16 and v11_fused_decode_w4a16; no
// exercise): W held as 4-bit codes in groups of 128 along K (models/gpt2/quantize.h), each
// group g of row n with an FP32 scale and a zero point (0 .. 15):
//   W[n][k] ~ (q[n][k] - zero[n][g]) * scale[n][g],   g = k / 128,  G = ceil(K / 128) groups a row
//   q      (N, K / 2) bytes, two codes each, in the GEMV's load order (int4_byte_in_row)
//   scale  (N, G) FP32,   zero (N, G) uint8;   K % 32 == 0 (whole 16-byte loads of 32 codes)
//   gemv_w4a16           y (N) = epilogue( sum_k x[k] * W~[n][k] + b[n] )
//   ln_gemv_w4a16        y (N) = epilogue( (W~ (N, C) · LayerNorm(h))[n] + b[n] ), as ln_gemv
//   gemv_residual_w4a16  y (N) = res (N) + (W~ (N, K) · x (K))[n] + b (N),       as gemv_residual
// x, r, gamma, beta, b, res, h, y BF16; sums in FP32.
inline constexpr int kInt4Group = 128;  // codes per group along K (the last group of a row may be shorter)
inline constexpr int kInt4Piece = 32;   // codes per 16-byte load: K must be a multiple

// Where the code of W[n][k] lives in its row's K / 2 bytes: 16-byte piece k / 32, 32-bit word
// (k % 32) / 8 of it, byte (k % 8) % 4 of that word; the low nibble for k % 8 < 4, else the high.
// Word j of a piece holds codes k0 .. k0 + 7 (k0 = 32 p + 8 j) as  | q7 q3 | q6 q2 | q5 q1 | q4 q0 |
// (byte 3 .. byte 0, each high nibble | low nibble): the low nibbles are x[k0 .. k0 + 3]'s, the
// high ones x[k0 + 4 .. k0 + 7]'s. (The host quantizer's gpt2::int4_nibble is the same map.)
__host__ __device__ inline int int4_byte_in_row(int k) { return 16 * (k / 32) + 4 * ((k % 32) / 8) + (k % 8) % 4; }
__host__ __device__ inline int int4_shift(int k) { return k % 8 < 4 ? 0 : 4; }

using GemvW4Fn = void(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y,
                      int N, int K, Epilogue epi, cudaStream_t stream);
using LnGemvW4Fn = void(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                        const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* y, int N, int C,
                        Epilogue epi, float eps, cudaStream_t stream);
using GemvResidualW4Fn = void(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b,
                              const bf16* res, bf16* y, int N, int K, cudaStream_t stream);

// Throws std::invalid_argument naming K unless it is a multiple of kInt4Piece, and the scales
// or zero points when null.
inline void require_int4(int K, const float* scale, const uint8_t* zero) {
  if (K % kInt4Piece != 0) {
    throw std::invalid_argument("K = " + std::to_string(K) + ": INT4 rows are read in 16-byte loads of " +
                                std::to_string(kInt4Piece) + " codes, so K must be a multiple of " +
                                std::to_string(kInt4Piece));
  }
  if (scale == nullptr || zero == nullptr) {
    throw std::invalid_argument("scale or zero is null: INT4 weights need an FP32 scale and a zero point per group");
  }
}

namespace student {
LinearFn<bf16> linear;
GemvFn<bf16> gemv;
}  // namespace student

}  // namespace ch09
