// The model's own small kernels: the ops no chapter's exercise covers and no library has
// (a gather, the cache append, the step's bookkeeping), and this chapter's attention.
// Templated on the element type T (float or __nv_bfloat16); every sum in FP32.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace gpt2::kernels {

// tok (T, C) = wte[tokens[t]], pos (T, C) = wpe[*pos + t]: the two halves of x0, summed by
// the first LayerNorm. Tokens and the start position come from device memory.
template <class T>
void embedding(const int32_t* tokens, const int* pos, const T* wte, const T* wpe, T* tok, T* posrows, int n, int C,
               cudaStream_t stream);

// h = x + r (n elements), the FP32 path's residual add (BF16 uses chapter 6's fused form).
template <class T>
void residual_add(const T* x, const T* r, T* h, int64_t n, cudaStream_t stream);

// k_cache[h][*pos + t][d] = qkv[t][C + h*D + d], v_cache likewise from the third C columns.
template <class T>
void kv_append(const T* qkv, T* k_cache, T* v_cache, const int* pos, int n, int H, int D, int P, cudaStream_t stream);

// Causal multi-head attention: n queries (qkv rows), query t at position *pos + t sees keys
// 0 .. *pos + t of the cache. att[t][h*D + d]. FP32 scores, softmax and sums. D <= 128.
template <class T>
void attention(const T* qkv, const T* k_cache, const T* v_cache, const int* pos, T* att, int n, int H, int D, int P,
               cudaStream_t stream);

// For chapter 8's flash attention on a prompt (one sequence of n tokens, token-major):
// q (n, C), k (n, C), v (n, C) = the three thirds of each qkv row (n, 3C), and
// cu_seqlens (2) = {0, n}. BF16.
void split_qkv(const __nv_bfloat16* qkv, __nv_bfloat16* q, __nv_bfloat16* k, __nv_bfloat16* v, int* cu_seqlens, int n,
               int C, cudaStream_t stream);

// out[i] = float(in[i]).
template <class T>
void to_float(const T* in, float* out, int n, cudaStream_t stream);

// After an argmax, the step's bookkeeping on the device (one thread):
//   next = token = *index;  *pos += advance_by;  history[*pos] = *index
// history[p] is the token predicted for position p (the model's greedy continuation).
void advance(const int32_t* index, int32_t* next, int32_t* token, int* pos, int32_t* history, int advance_by,
             cudaStream_t stream);

// --- the batched decode step (batch.cu): row b of every activation is sequence b, which
// sits at its own position pos[b]; its cache is the b-th of [B][H][P][D].

// tok (n, C) = wte[tokens[b]], posrows (n, C) = wpe[pos[b]]: one token per sequence.
template <class T>
void embedding_rows(const int32_t* tokens, const int* pos, const T* wte, const T* wpe, T* tok, T* posrows, int n, int C,
                    cudaStream_t stream);

// k_cache[b][h][pos[b]][d] = qkv[b][C + h*D + d], v_cache likewise from the third C columns,
// and, when q is not null, q[b][h*D + d] = qkv[b][h*D + d]: the queries packed (n, C), the
// layout chapter 8's decode kernels read. 0 <= pos[b] < P.
template <class T>
void kv_append_rows(const T* qkv, T* k_cache, T* v_cache, T* q, const int* pos, int n, int H, int D, int P,
                    cudaStream_t stream);

// After an argmax over n rows, per sequence b (one thread each):
//   next[b] = token[b] = index[b];  pos[b] += 1;  history[b * stride + pos[b]] = index[b]
void advance_rows(const int32_t* index, int32_t* next, int32_t* token, int* pos, int32_t* history, int n, int stride,
                  cudaStream_t stream);

}  // namespace gpt2::kernels
