// Chapter 8 — attention forward, from three kernels to one on tensor cores: the interface
// between your kernels and the harness.
//
// You write the launchers declared in namespace ch08::student, one exercise per file:
//   ex1_unfused_attention.cu      S = scale * Q K^T (masked) into a buffer, a row softmax,
//                                 O = P V: three kernels, FP32
//   ex2_fused_scores_softmax.cu   ONE kernel from Q, K and the causal mask to P, FP32
//   ex3_flash_attention_f32.cu    flash attention on CUDA cores, FP32: a tile of queries per
//                                 block, a loop over tiles of keys, the online softmax, no
//                                 Sq x Sk buffer, masked tiles skipped
//   ex4_flash_attention_mma.cu    flash attention in BF16 on tensor cores (mma.sync), the
//                                 FlashAttention-2 structure
// Each launcher receives device pointers and a stream, computes its grid with a ceiling
// division, launches its kernel(s) on that stream and checks each launch.
//
// The data: B sequences ("batch") of H heads each, row-major and dense:
//
//   q[b][h][i][d]   0 <= i < Sq  (queries)        element ((b * H + h) * Sq + i) * D + d
//   k[b][h][j][d]   0 <= j < Sk  (keys)           element ((b * H + h) * Sk + j) * D + d
//   v[b][h][j][d]   0 <= j < Sk  (values)         same layout as k
//   o[b][h][i][d]   the output                    same layout as q
//   lse[b][h][i]    the log-sum-exp of row i      element (b * H + h) * Sq + i     (FP32)
//   p[b][h][i][j]   the probabilities (ex2)       element ((b * H + h) * Sq + i) * Sk + j (FP32)
//
// The operation, for every (b, h) and query row i (in exact arithmetic; your kernels accumulate
// in FP32, whatever the element type):
//
//   s[j]  = scale * sum_d q[i][d] * k[j][d]                        scale = 1 / sqrt(D)
//   s[j]  = -inf  for every key j that the mask hides (below)
//   m     = max_j s[j]
//   l     = sum_j exp(s[j] - m)
//   p[j]  = exp(s[j] - m) / l                                      (the softmax of the row)
//   o[d]  = sum_j p[j] * v[j][d]
//   lse   = m + log(l)      the NATURAL log-sum-exp of the scaled, masked scores, in FP32:
//                           with it, two partial results over different keys can be merged
//                           later (split-KV decoding), and p[j] = exp(s[j] - lse).
//
// The causal mask, and how it aligns when Sq != Sk (bottom-right, as FlashAttention-2 does):
// the LAST query row sees every key, and row i sees keys
//
//   j <= i + (Sk - Sq)
//
// so with Sq == Sk row i sees keys 0..i (the diagonal included), with Sq < Sk (new queries
// appended to a cache of keys) the queries are the last Sq positions of the sequence, and
// with Sq > Sk the first Sq - Sk rows see NO key. A row that sees no key has o = 0 (every
// element) and lse = -inf (the log of an empty sum). Without the mask every row sees all Sk.
//
//   Sq = 3, Sk = 5 (x: visible)      Sq = 5, Sk = 3
//        j: 0 1 2 3 4                     j: 0 1 2
//     i=0   x x x . .                  i=0   . . .     o = 0, lse = -inf
//     i=1   x x x x .                  i=1   . . .     o = 0, lse = -inf
//     i=2   x x x x x                  i=2   x . .
//                                      i=3   x x .
//                                      i=4   x x x
//
// Rules the tests hold you to:
//   * any B, H >= 1 (B * H from 1 to 128 is tested), any Sq, Sk >= 1: 1, 2, 17, 63, 64, 65,
//     127, 128, 129, 1000 and 4096 are tested, square and not (Sq = 1 is the decode shape).
//     Your tiles will not divide them: the last tile of queries and of keys is partial.
//   * D is a multiple of 8 and at most 128; 32, 64, 96 and 128 are tested, so a kernel that
//     only works for one head size fails. (D % 8 == 0 makes every row of q, k, v and o a whole
//     number of 16-byte pieces in BF16, and of 32-byte pieces in FP32.)
//   * every pointer is 16-byte aligned; the outputs do not overlap the inputs or each other;
//     every output is poisoned (NaN) before your launcher runs, and the memory just after
//     each input is unmapped in one of the test's passes: a read past the last key faults.
//   * `scratch` is device memory for launchers that need a buffer of their own (exercise 1
//     keeps its Sq x Sk scores there): it holds scratch_bytes_f32(...) bytes when the variant
//     asks for it in variants.cu, and is null otherwise. Never allocate memory in a launcher.
//   * the inputs are random: q, k, v ~ normal(0, 1) (scores of standard deviation about 1),
//     and also q ~ normal(0, 4) (a softmax close to one-hot) and keys whose scale grows
//     along the sequence (the row maximum keeps rising, tile after tile).
//
// Tolerances (chapters/ch08_flash_attention/spec.cu): FP32 results within a few 1e-5 of a
// float64 reference; BF16 results within 2x the error of the library's own BF16 result
// (cuBLAS, P rounded to BF16) plus a small floor, the rule the FlashAttention tests use.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

namespace ch08 {

using bf16 = __nv_bfloat16;

// The scale every test and benchmark passes: 1 / sqrt(D), rounded to FP32 once.
inline float attention_scale(int D) { return 1.0f / std::sqrt(static_cast<float>(D)); }

// Bytes of an FP32 scores buffer of every (b, h): B * H * Sq * Sk floats (exercise 1).
inline size_t scratch_bytes_f32(int B, int H, int Sq, int Sk) {
  return sizeof(float) * static_cast<size_t>(B) * H * Sq * Sk;
}

// ex1 and ex3: attention forward in FP32. `scratch` is null unless the variant asks for it.
using AttentionF32Fn = void(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H,
                            int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream);

// ex2: the probabilities alone, p = softmax(scale * q k^T, masked), written as FP32
// p[b][h][i][j] (0 where the mask hides key j, and a row that sees no key is all 0).
using ScoresSoftmaxF32Fn = void(const float* q, const float* k, float* p, int B, int H, int Sq, int Sk, int D,
                                float scale, bool causal, cudaStream_t stream);

// ex4: attention forward with BF16 q, k, v and o, FP32 accumulation and FP32 lse.
using AttentionBf16Fn = void(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq,
                             int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream);

namespace student {
AttentionF32Fn unfused_attention;       // ex1_unfused_attention.cu
ScoresSoftmaxF32Fn fused_scores_softmax;  // ex2_fused_scores_softmax.cu
AttentionF32Fn flash_attention_f32;     // ex3_flash_attention_f32.cu
AttentionBf16Fn flash_attention_mma;    // ex4_flash_attention_mma.cu
}  // namespace student

}  // namespace ch08
