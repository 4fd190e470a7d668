// The unfused attention pipeline on cuBLAS, as a framework runs it when nothing fuses it:
//
//   1. S = scale * Q K^T      cublasGemmStridedBatchedEx, one GEMM per (b, h), S in FP32
//   2. P = softmax(S, mask)   one block per row; the causal mask is applied while reading S
//                             (hidden keys are skipped and written as 0); lse written
//   3. O = P V                cublasGemmStridedBatchedEx
//
// Used twice: as the library baseline of the benchmark (reference/ch08_flash_attention/
// cublas_unfused.cu registers it), and inside the checks as the YARDSTICK of the tolerance
// rule: a kernel's largest error against the float64 reference may be at most twice this
// pipeline's own largest error on the same inputs, plus a small floor (chapters/
// ch08_flash_attention/spec.cu). So it is written in this header and compiled into the
// spec library as well as the reference library (templates and inline functions only).
//
// Precision, per pipeline:
//   FP32   S, P and O in FP32, CUBLAS_COMPUTE_32F with CUBLAS_DEFAULT_MATH: FP32 products and
//          sums, no TF32 (the same arithmetic as the chapter's FP32 kernels).
//   BF16   S = Q K^T from BF16 inputs accumulated and STORED in FP32; the softmax in FP32; P
//          rounded to BF16 (the second GEMM's input type); O = P V accumulated in FP32 and
//          rounded to BF16. The same roundings a flash kernel makes (P to BF16 before the
//          second product, O once at the end): the "same-precision result" of the rule.
//
// Row-major through column-major cuBLAS: a row-major R x C matrix with row stride ld is a
// column-major C x R matrix. S (Sq x Sk, row-major) is column-major S^T = K Q^T:
//   gemm(op(A) = K: A is K stored D x Sk column-major, transposed (CUBLAS_OP_T), lda = D;
//        op(B) = Q^T: B is Q stored D x Sq column-major, not transposed, ldb = D;
//        m = Sk, n = Sq, k = D, C = S with ldc = Sk)
// O (Sq x D, row-major) is column-major O^T = V^T P^T:
//   gemm(A = V stored D x Sk, lda = D; B = P stored Sk x Sq, ldb = Sk; m = D, n = Sq, k = Sk)
// Batches: (b, h) pairs, with strides Sk * D (K, V), Sq * D (Q, O) and Sq * Sk (S, P).
//
// Memory: the scores of every head at once, B * H * Sq * Sk floats (and as many BF16 for P
// in the BF16 pipeline): 4.3 GB at B = 4, H = 16, Sq = Sk = 4096; 17 GB at 8192. That is
// the point of the chapter. The launchers use `scratch` when the harness gives it (the
// variant declares its size), else a buffer of their own, kept for the process.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "ch08.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "device/reduce.cuh"

namespace ch08::unfused {

constexpr int kSoftmaxThreads = 256;

// Scratch bytes of each pipeline: S in FP32, and for BF16 also P in BF16 after it (256-byte
// aligned, as cuBLAS prefers).
inline size_t scores_bytes(int B, int H, int Sq, int Sk) { return scratch_bytes_f32(B, H, Sq, Sk); }
inline size_t probs_offset_bf16(int B, int H, int Sq, int Sk) { return (scores_bytes(B, H, Sq, Sk) + 255) / 256 * 256; }
inline size_t scratch_bytes_bf16(int B, int H, int Sq, int Sk) {
  return probs_offset_bf16(B, H, Sq, Sk) + sizeof(bf16) * static_cast<size_t>(B) * H * Sq * Sk;
}

// A device buffer of at least `bytes` kept for the rest of the process (one per device), for
// calls without `scratch` (the yardstick inside the checks). Grows, never shrinks.
inline void* own_scratch(size_t bytes) {
  static std::mutex mutex;
  static std::map<int, std::pair<void*, size_t>> held;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto& [ptr, size] = held[device];
  if (size < bytes) {
    if (ptr != nullptr) CUDA_CHECK(cudaFree(ptr));  // waits for the device: no kernel still uses it
    ptr = nullptr;
    size = 0;
    CUDA_CHECK(cudaMalloc(&ptr, bytes));
    size = bytes;
  }
  return ptr;
}

// The softmax of one row of n scores `in` into `out`, over its first `visible` (the rest get
// p = 0), by the whole block; `red` is its __shared__ exchange of kSoftmaxThreads / 32 floats.
// Returns the row's max and sum of exp(x - max), the same in every thread.
struct RowStats {
  float mx, sum;
};
template <class P>
__device__ __forceinline__ RowStats softmax_row(const float* in, P* out, int visible, int n, float* red) {
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < visible; j += kSoftmaxThreads) mx = fmaxf(mx, in[j]);
  mx = wb::block_reduce<kSoftmaxThreads>(mx, wb::Max{}, red);  // to every thread
  float sum = 0.0f;
  for (int j = threadIdx.x; j < visible; j += kSoftmaxThreads) sum += expf(in[j] - mx);
  __syncthreads();  // every thread has read red: it may be written again
  sum = wb::block_reduce<kSoftmaxThreads>(sum, wb::Sum{}, red);
  const float inv = visible > 0 ? 1.0f / sum : 0.0f;
  for (int j = threadIdx.x; j < n; j += kSoftmaxThreads) {
    const float v = j < visible ? expf(in[j] - mx) * inv : 0.0f;
    if constexpr (std::is_same_v<P, float>)
      out[j] = v;
    else
      out[j] = __float2bfloat16_rn(v);
  }
  return {mx, sum};
}

// One block per row r = bh * Sq + i of S (Sk floats): the keys the mask leaves visible are
// j < visible = min(Sk, i + Sk - Sq + 1) with the mask, all Sk without. p may be s itself
// (FP32: in place; each thread reads an element before it writes the same element).
template <class P>
__global__ void __launch_bounds__(kSoftmaxThreads)
    masked_softmax_kernel(const float* s, P* p, float* lse, int Sq, int Sk, bool causal) {
  __shared__ float red[kSoftmaxThreads / 32];
  const size_t row = blockIdx.x;
  const int i = static_cast<int>(row % Sq);
  const int visible = causal ? min(Sk, max(0, i + Sk - Sq + 1)) : Sk;
  const RowStats r = softmax_row(s + row * Sk, p + row * Sk, visible, Sk, red);
  if (threadIdx.x == 0 && lse != nullptr) lse[row] = visible > 0 ? r.mx + logf(r.sum) : -INFINITY;
}

inline cublasHandle_t handle(cudaStream_t stream) {
  cublasHandle_t h = wb::cublas_for(stream);
  CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // FP32 stays FP32: no TF32
  return h;
}

// S (FP32, bh batches of Sq x Sk) = scale * Q K^T, Q and K of type `in`.
inline void gemm_scores(cudaStream_t stream, cudaDataType_t in, const void* q, const void* k, float* s, int bh, int Sq,
                        int Sk, int D, float scale) {
  const float zero = 0.0f;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle(stream), CUBLAS_OP_T, CUBLAS_OP_N, Sk, Sq, D, &scale, k, in, D,
                                          static_cast<long long>(Sk) * D, q, in, D, static_cast<long long>(Sq) * D,
                                          &zero, s, CUDA_R_32F, Sk, static_cast<long long>(Sq) * Sk, bh,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// O (type `t`, bh batches of Sq x D) = P V, P and V of type `t`, FP32 accumulation.
inline void gemm_pv(cudaStream_t stream, cudaDataType_t t, const void* p, const void* v, void* o, int bh, int Sq,
                    int Sk, int D) {
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle(stream), CUBLAS_OP_N, CUBLAS_OP_N, D, Sq, Sk, &one, v, t, D,
                                          static_cast<long long>(Sk) * D, p, t, Sk, static_cast<long long>(Sq) * Sk,
                                          &zero, o, t, D, static_cast<long long>(Sq) * D, bh, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
}

template <class P>
inline void softmax(const float* s, P* p, float* lse, int bh, int Sq, int Sk, bool causal, cudaStream_t stream) {
  const long long rows = static_cast<long long>(bh) * Sq;
  if (rows > 0x7FFFFFFFLL) throw std::invalid_argument("unfused softmax: more than 2^31 - 1 rows");
  masked_softmax_kernel<P><<<static_cast<unsigned>(rows), kSoftmaxThreads, 0, stream>>>(s, p, lse, Sq, Sk, causal);
  WB_CHECK_LAUNCH();
}

// The probabilities alone (FP32): GEMM into p, then the masked softmax in place.
inline void probs_f32(const float* q, const float* k, float* p, int B, int H, int Sq, int Sk, int D, float scale,
                      bool causal, cudaStream_t stream) {
  const int bh = B * H;
  gemm_scores(stream, CUDA_R_32F, q, k, p, bh, Sq, Sk, D, scale);
  softmax<float>(p, p, nullptr, bh, Sq, Sk, causal, stream);
}

// Attention in FP32: S in scratch, softmax in place, O = P V.
inline void attention_f32(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                          int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  const int bh = B * H;
  float* s = static_cast<float*>(scratch != nullptr ? scratch : own_scratch(scores_bytes(B, H, Sq, Sk)));
  gemm_scores(stream, CUDA_R_32F, q, k, s, bh, Sq, Sk, D, scale);
  softmax<float>(s, s, lse, bh, Sq, Sk, causal, stream);
  gemm_pv(stream, CUDA_R_32F, s, v, o, bh, Sq, Sk, D);
}

// Attention in BF16: S in FP32, P in BF16 (both in scratch), O = P V rounded to BF16.
inline void attention_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq,
                           int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  const int bh = B * H;
  char* base = static_cast<char*>(scratch != nullptr ? scratch : own_scratch(scratch_bytes_bf16(B, H, Sq, Sk)));
  float* s = reinterpret_cast<float*>(base);
  bf16* p = reinterpret_cast<bf16*>(base + probs_offset_bf16(B, H, Sq, Sk));
  gemm_scores(stream, CUDA_R_16BF, q, k, s, bh, Sq, Sk, D, scale);
  softmax<bf16>(s, p, lse, bh, Sq, Sk, causal, stream);
  gemm_pv(stream, CUDA_R_16BF, p, v, o, bh, Sq, Sk, D);
}

// --- part 2: grouped heads and decode, on the same two GEMMs -------------------------------
//
// Grouped heads: the G = Hq / Hkv query heads of kv head (b, hkv) are neighbours in q, so
// they are ONE row-major (G * Sq) x D matrix against that head's K and V: the GEMMs run over
// B * Hkv batches of G * Sq rows, and the softmax over the B * Hq * Sq rows of S in (b, hq, i)
// order, with its mask by i, exactly as in the dense pipeline.
inline void attention_gqa_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int Hq, int Hkv,
                               int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  if (Hkv < 1 || Hq % Hkv != 0) throw std::invalid_argument("cublas_unfused: Hkv must divide Hq");
  const int G = Hq / Hkv, bkv = B * Hkv;
  char* base = static_cast<char*>(scratch != nullptr ? scratch : own_scratch(scratch_bytes_bf16(B, Hq, Sq, Sk)));
  float* s = reinterpret_cast<float*>(base);
  bf16* p = reinterpret_cast<bf16*>(base + probs_offset_bf16(B, Hq, Sq, Sk));
  gemm_scores(stream, CUDA_R_16BF, q, k, s, bkv, G * Sq, Sk, D, scale);
  softmax<bf16>(s, p, lse, B * Hq, Sq, Sk, causal, stream);
  gemm_pv(stream, CUDA_R_16BF, p, v, o, bkv, G * Sq, Sk, D);
}

// Decode: one query per (b, hq) against the first L_b = seq_lens[b] entries of a cache of
// L_max. Row r = b * Hq + hq of S; keys j >= L_b get p = 0 (their stale values are multiplied
// by exactly 0 in the second GEMM, which runs over all L_max keys). A template, as the kernel
// above, so that the header may be compiled into more than one library.
template <class P>
__global__ void __launch_bounds__(kSoftmaxThreads)
    decode_softmax_kernel(const float* s, P* p, float* lse, const int* seq_lens, int Hq, int L_max) {
  __shared__ float red[kSoftmaxThreads / 32];
  const size_t row = blockIdx.x;
  const int visible = min(max(seq_lens[row / Hq], 0), L_max);
  const RowStats r = softmax_row(s + row * L_max, p + row * L_max, visible, L_max, red);
  if (threadIdx.x == 0) lse[row] = visible > 0 ? r.mx + logf(r.sum) : -INFINITY;
}

inline void decode_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, bf16* o,
                        float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
                        cudaStream_t stream) {
  if (Hkv < 1 || Hq % Hkv != 0) throw std::invalid_argument("cublas_decode: Hkv must divide Hq");
  const int G = Hq / Hkv, bkv = B * Hkv;
  char* base = static_cast<char*>(scratch != nullptr ? scratch : own_scratch(scratch_bytes_bf16(B, Hq, 1, L_max)));
  float* s = reinterpret_cast<float*>(base);
  bf16* p = reinterpret_cast<bf16*>(base + probs_offset_bf16(B, Hq, 1, L_max));
  gemm_scores(stream, CUDA_R_16BF, q, k_cache, s, bkv, G, L_max, D, scale);
  const long long rows = static_cast<long long>(B) * Hq;
  decode_softmax_kernel<bf16>
      <<<static_cast<unsigned>(rows), kSoftmaxThreads, 0, stream>>>(s, p, lse, seq_lens, Hq, L_max);
  WB_CHECK_LAUNCH();
  gemm_pv(stream, CUDA_R_16BF, p, v_cache, o, bkv, G, L_max, D);
}

}  // namespace ch08::unfused
