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
//   ex5_decode_attention.cu       decode: one query per sequence against its KV cache, the
//                                 keys split over many CTAs and merged by log-sum-exp
//   ex6_ragged_attention.cu       sequences of different lengths packed back to back
//                                 (cu_seqlens), no padding computed
// (the forms of part 2 are declared at the end of this file)
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
//   * a tensor may hold more than 2^31 elements (the large cases: 64 heads of a million keys,
//     B * H * Sq * Sk scores, a long KV cache, a ragged batch of 16 M tokens): compute every
//     offset in 64 bits (size_t);
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
#include <stdexcept>
#include <string>

namespace ch08 {

using bf16 = __nv_bfloat16;

// The scale every test and benchmark passes: 1 / sqrt(D), rounded to FP32 once.
inline float attention_scale(int D) { return 1.0f / std::sqrt(static_cast<float>(D)); }

// Bytes of an FP32 scores buffer of every (b, h): B * H * Sq * Sk floats (exercise 1).
inline size_t scratch_bytes_f32(int B, int H, int Sq, int Sk) {
  return sizeof(float) * static_cast<size_t>(B) * H * Sq * Sk;
}

// ex1 and ex3: attention forward in FP32. `scratch` is null unless the variant asks for it.
using AttentionF32Fn = void(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                            int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream);

// ex2: the probabilities alone, p = softmax(scale * q k^T, masked), written as FP32
// p[b][h][i][j] (0 where the mask hides key j, and a row that sees no key is all 0).
using ScoresSoftmaxF32Fn = void(const float* q, const float* k, float* p, int B, int H, int Sq, int Sk, int D,
                                float scale, bool causal, cudaStream_t stream);

// ex4: attention forward with BF16 q, k, v and o, FP32 accumulation and FP32 lse.
using AttentionBf16Fn = void(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq,
                             int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream);

// ---------------------------------------------------------------------------------------
// Part 2: attention as a serving engine runs it. Every form below is BF16 in and out, FP32
// accumulation and FP32 lse, scale 1 / sqrt(D), and the same rules as above (any lengths,
// D a multiple of 8 up to 128, 16-byte aligned pointers, poisoned outputs, fenced inputs).
//
// Grouped-query attention (GQA). Hq query heads share Hkv key/value heads: Hkv divides Hq,
// G = Hq / Hkv query heads form a group, and query head hq reads key/value head
//
//   hkv = hq / G          (Hq = Hkv: ordinary attention; Hkv = 1: multi-query attention)
//
// so the G heads of a group are NEIGHBOURS (heads 0..G-1 use kv head 0, G..2G-1 kv head 1).
//
// (a) Dense GQA prefill, attention_gqa/bf16 (the solution's v4):
//   q[b][hq][i][d], o[b][hq][i][d], lse[b][hq][i]    as above, with H = Hq
//   k[b][hkv][j][d], v[b][hkv][j][d]                  K and V stored once per kv head
using AttentionGqaBf16Fn = void(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int Hq,
                                int Hkv, int Sq, int Sk, int D, float scale, bool causal, void* scratch,
                                cudaStream_t stream);

// (b) Ragged (variable-length) batches, attention_ragged/bf16 (ex6): B sequences of lengths
// L_0 .. L_{B-1} packed back to back, TOKEN-major as a projection writes them, no padding:
//
//   cu_seqlens[b]    int32, B + 1 entries: 0 = cu_seqlens[0] <= cu_seqlens[1] <= ... ,
//                    sequence b is tokens cu_seqlens[b] .. cu_seqlens[b + 1] - 1,
//                    T = cu_seqlens[B] tokens in all (device memory)
//   q[t][hq][d]      element (t * Hq + hq) * D + d        o: the same layout
//   k[t][hkv][d]     element (t * Hkv + hkv) * D + d      v: the same layout
//   lse[hq][t]       element hq * T + t                   (FP32, head-major as FlashAttention's)
//
// Each sequence attends to itself only (Sq = Sk = L_b; with the mask, token i of a sequence
// sees tokens 0..i of the SAME sequence). `max_seqlen` is the longest L_b (known to the host,
// for the grid); T is passed too. A token of another sequence is never read.
using RaggedAttentionBf16Fn = void(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse,
                                   const int* cu_seqlens, int B, int T, int Hq, int Hkv, int max_seqlen, int D,
                                   float scale, bool causal, void* scratch, cudaStream_t stream);

// (c) Decode attention with a KV cache, attention_decode/bf16 (ex5): ONE new query token per
// sequence against everything the sequence has seen. The cache is contiguous per sequence
// and per kv head, room for L_max tokens, of which the first L_b hold data:
//
//   q[b][hq][d]              element (b * Hq + hq) * D + d        o: the same layout
//   k_cache[b][hkv][j][d]    element ((b * Hkv + hkv) * L_max + j) * D + d,  0 <= j < L_max
//   v_cache                  the same layout as k_cache
//   seq_lens[b]              int32 L_b, 1 <= L_b <= L_max (device memory): the new token's
//                            own k and v are ALREADY in the cache, at j = L_b - 1
//   lse[b][hq]               element b * Hq + hq                  (FP32)
//
// The new token sees every cached token and itself (keys 0 .. L_b - 1; no mask is needed,
// the cache holds only the past). Entries j >= L_b hold stale data: never let them count.
// `scratch` holds decode_scratch_bytes(B, Hq, Hkv, L_max, D) bytes for partial results: a
// split-KV launcher cuts each sequence's keys into decode_splits(B, Hkv, L_max) chunks (or
// fewer), one CTA per (chunk, b, hkv), and merges the chunks' (o, lse) afterwards.
using DecodeAttentionBf16Fn = void(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens,
                                   bf16* o, float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale,
                                   void* scratch, cudaStream_t stream);

// Keys per tile of the decode kernels, and about how many CTAs a decode launch aims for (a few
// per SM on an H100's 132 or an A100's 108, so that batch 1 reads the cache with every SM).
constexpr int kDecodeKeysPerTile = 64;
constexpr int kDecodeTargetCtas = 512;

// Chunks per sequence: enough CTAs for the whole GPU, at least one key tile per chunk.
inline int decode_splits(int B, int Hkv, int L_max) {
  const long long groups = static_cast<long long>(B) * Hkv;
  const long long tiles = (static_cast<long long>(L_max) + kDecodeKeysPerTile - 1) / kDecodeKeysPerTile;
  long long want = (kDecodeTargetCtas + groups - 1) / groups;
  if (want < 1) want = 1;
  return static_cast<int>(want < tiles ? want : (tiles < 1 ? 1 : tiles));
}

// Ticket counters for a launcher whose last CTA of each group merges the group's chunks
// (solution v6): one per (b, kv head, block of 16 query heads of its group) for the first
// kDecodeTargetCtas (b, kv head) pairs: with more pairs than that, decode_splits gives one
// chunk each and nothing is merged. The counters depend on Hq and Hkv alone, not on B, so
// they keep their place when one scratch serves several batch sizes.
inline size_t decode_counter_bytes(int Hq, int Hkv) {
  const size_t group = Hkv > 0 ? static_cast<size_t>(Hq / Hkv) : 1;
  const size_t row_blocks = (group + 15) / 16;
  return sizeof(unsigned int) * kDecodeTargetCtas * row_blocks;
}

// Partial results of every chunk: o (D floats) and lse (1 float) per (chunk, b, hq), and room
// for the ticket counters (decode_counter_bytes, a multiple of 256 bytes), which v6 keeps in
// front of its partial results (v5 and the exercise need not use them). Counters start at
// zero: the scratch is allocated zeroed once (the harness and the model do), and a launcher
// that uses them leaves them zero.
inline size_t decode_scratch_bytes(int B, int Hq, int Hkv, int L_max, int D) {
  return decode_counter_bytes(Hq, Hkv) +
         sizeof(float) * static_cast<size_t>(decode_splits(B, Hkv, L_max)) * B * Hq * (D + 1);
}

// Every part-2 launcher refuses groups that do not divide: call this first (it throws
// std::invalid_argument naming the launcher; the tests check that nothing was launched).
inline void require_groups(const char* who, int Hq, int Hkv) {
  if (Hq < 1 || Hkv < 1 || Hq % Hkv != 0) {
    throw std::invalid_argument(std::string(who) + ": Hkv must divide Hq (Hq = " + std::to_string(Hq) +
                                ", Hkv = " + std::to_string(Hkv) + ")");
  }
}

namespace student {
AttentionF32Fn unfused_attention;
ScoresSoftmaxF32Fn fused_scores_softmax;
AttentionF32Fn flash_attention_f32;
AttentionBf16Fn flash_attention_mma;
DecodeAttentionBf16Fn decode_attention;
RaggedAttentionBf16Fn ragged_attention;
}  // namespace student

}  // namespace ch08
