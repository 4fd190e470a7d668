// Chapter 9's solution ladders: three op families, one folder each, one file per step (the
// step numbers run across the chapter, in the order the docs teach them), each a launcher of
// ch09.cuh's types.
//
// linear/  the prompt's linears, y = epilogue(x W^T + b), M tokens at once
//   v1_naive          one thread per output, a loop over k; the GEMV one thread per row:
//                     right for every shape, the epilogue written once (epilogue.cuh)
//   v2_smem_tiled     (64, 64) output tiles on CUDA cores, (64, 16) tiles of x and of W in
//                     shared memory, 4 x 4 outputs per thread: the FP32 model path's GEMM
//   v3_wmma_epilogue  BF16 tensor cores (WMMA 16x16x16), W [N, K] read as a col_major
//                     matrix_b, the accumulator tile staged in shared memory where the
//                     bias and GELU are applied before the one store: the fused epilogue
//   v7_skinny_gemm    v4 over up to 8 rows of x per read of W: batched decode's skinny GEMM
//                     (2 to 16 tokens), W read once per 8 rows
//   v8_mma_epilogue   v3 on ldmatrix + mma.sync.m16n8k16 (chapter 5's v5 loop): 4 cp.async
//                     stages, XOR-swizzled tiles, (128, 128) or (128, 64) tiles chosen so a
//                     512-token prompt fills the SMs; v3's epilogue on the registers, 16-byte
//                     stores: the prefill GEMM of the BF16 model
//   v12_wgmma_epilogue  (Hopper sm_90a only) v8 on TMA + mbarriers + wgmma: chapter 5's
//                     Hopper pipeline from harness/device/wgmma_gemm.cuh, x and W both
//                     K-major, a producer and two consumer warpgroups, the tile chosen per
//                     shape so a 512-token prompt fills the SMs in one wave; v8's epilogue
//                     on the registers (kernel: linear/hopper/; K % 8 != 0 -> v8)
//   v13_wgmma_bias_ahead (Hopper sm_90a only) v12's kernel with each thread's bias loaded
//                     before the K loop, not between the last wgmma and the stores: the
//                     prefill GEMM of the BF16 model on Hopper
// gemv/    one token's linears, y = epilogue(W x + b): every weight read once
//   v4_gemv_warp      one warp per row of W, 16-byte loads, a shuffle sum: the batch-1
//                     GEMV at memory speed
//   v5_gemv_w8a16     v4 on INT8 weights with one FP32 scale per row (W8A16): half the
//                     weight bytes per token, dequantized in registers, FP32 sums
//   v10_gemv_w4a16    v5 on INT4 weights in groups of 128 along K, each with an FP32 scale
//                     and a zero point (W4A16): a quarter of BF16's bytes; codes packed in
//                     the order a lane unpacks them, x staged in shared memory as FP32
// decode/  the whole decode step in fewer kernels
//   v6_fused_decode   the LayerNorm in the GEMV's prologue (ln_gemv), the residual add in
//                     its epilogue (gemv_residual), the LM head and the argmax in one kernel
//                     (gemv_argmax); the first two also on v5's INT8 weights
//                     (ln_gemv_w8a16, gemv_residual_w8a16)
//   v11_fused_decode_w4a16  v6's ln_gemv, ln_gemv_qkv and gemv_residual on v10's INT4
//                     weights: the row staged in FP32, a wave of CTAs looping over rows
//   v14_w4a16_loads_ahead  v10's and v11's INT4 ops (gemv_w4a16, ln_gemv_w4a16, ln_gemv_qkv,
//                     gemv_residual_w4a16) with each lane's whole batch of rows (8 pieces,
//                     their scales and zero points, the bias) loaded into registers before the
//                     kernel waits for the previous one, a grid of the resident CTAs and one
//                     batch per warp at GPT-2's sizes: all of an SM's weights in flight at once
//                     (the model's --int4 --decode=fused)
//   v15_w4a16_slab_mma  v14's four INT4 ops with a CTA's contiguous rows (codes, scales, zero
//                     points, bias, gamma and beta) copied into shared memory by cp.async before
//                     the wait, 64 registers a lane so the next kernel's CTA is resident beside
//                     it, the next kernel triggered at the wait, and the dot products on tensor
//                     cores (codes to BF16 (q - zero) two at a time, m16n8k16): the model's
//                     --int4 --decode=fused; its BF16 form runs the fused step's layer GEMVs
//                     where a CTA's rows fit (GPT-2 124M's)
//   v16_decode_attention_ahead  the fused step's decode attention: a CTA per head holding the
//                     head's cached keys and values in shared memory, copied before the wait,
//                     no split of the keys and no merge (head size 64)
//   v9_persistent_decode  the step's L layers in one persistent kernel (one CTA per SM, grid
//                     barriers between the phases): each CTA loads its rows of the next op's
//                     weights into shared memory before the barrier, so DRAM streams across
//                     op boundaries (BF16, batch 1; the model's --decode=persistent)
#pragma once
#include <string>

#include "ch09.cuh"

namespace ch09::solution {

template <class T>
void linear_naive(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream);
template <class T>
void gemv_naive(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream);

template <class T>
void linear_tiled(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream);

void linear_wmma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                 cudaStream_t stream);

// K % 8 != 0 (or x, w not 16-byte aligned): calls linear_wmma.
void linear_mma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                cudaStream_t stream);

// Hopper only (compute capability 9.0; throws elsewhere). K % 8 != 0 (or x, w not 16-byte
// aligned): calls linear_mma.
void linear_wgmma_tma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                      cudaStream_t stream);
void linear_wgmma_bias_ahead(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                             cudaStream_t stream);
// What both do (linear/v12_wgmma_epilogue.cu): the checks, then the step's Hopper kernel or v8.
enum class HopperStep { V12, V13 };
void linear_on_hopper(HopperStep step, const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K,
                      Epilogue epi, cudaStream_t stream);
// Whether this build has the Hopper steps and this GPU runs them (the model's prefill asks).
bool linear_on_hopper_available();

template <class T>
void gemv_warp(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream);

template <class T>
void linear_skinny(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream);

// y (N) = epilogue(scale[n] * (q (N, K) · x (K))[n] + b (N)): q int8, scale FP32, the rest BF16.
void gemv_w8a16(const bf16* x, const int8_t* q, const float* scale, const bf16* b, bf16* y, int N, int K, Epilogue epi,
                cudaStream_t stream);

// v6_fused_decode.cu: the ops of ch09.cuh (LnGemvFn, GemvResidualFn, GemvArgmaxFn) ...
template <class T>
void ln_gemv(const T* x, const T* r, const T* gamma, const T* beta, const T* w, const T* b, T* h, T* y, int N, int C,
             Epilogue epi, float eps, cudaStream_t stream);
template <class T>
void gemv_residual(const T* x, const T* w, const T* b, const T* res, T* y, int N, int K, cudaStream_t stream);
template <class T>
void gemv_argmax(const T* x, const T* w, T* y, int32_t* index, float* value, int N, int K, void* workspace,
                 cudaStream_t stream);
size_t gemv_argmax_workspace_bytes();  // gemv_argmax's workspace (any N), zeroed once

// ... and the model's forms of them. The QKV projection's epilogue also stores the token's
// key and value (its rows C .. 3C) in the layer's KV cache, k_cache[h][*pos][d] (the model's
// kv_append, folded in); the LM head takes ln_f in its prologue.
template <class T>
struct KvCacheTarget {
  T* k_cache = nullptr;      // [H][P][D]
  T* v_cache = nullptr;      // [H][P][D]
  const int* pos = nullptr;  // device memory: the position the token's key and value go to
  int H = 0, D = 0, P = 0;
};
template <class T>
void ln_gemv_qkv(const T* x, const T* r, const T* gamma, const T* beta, const T* w, const T* b, T* h, T* qkv, int C,
                 float eps, const KvCacheTarget<T>& kv, cudaStream_t stream);
template <class T>
void ln_gemv_argmax(const T* x, const T* gamma, const T* beta, const T* w, T* y, int32_t* index, float* value, int N,
                    int C, float eps, void* workspace, cudaStream_t stream);

// ... and on INT8 weights (W8A16, as gemv_w8a16): q (N, K) int8 with one FP32 scale per row,
// W[n][k] ~ q[n][k] * scale[n]; BF16 activations. The ops LnGemvW8Fn and GemvResidualW8Fn
// (ch09.cuh), and the QKV form with the KV-cache store. The LM head has no INT8 form.
void ln_gemv_w8a16(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const int8_t* q,
                   const float* scale, const bf16* b, bf16* h, bf16* y, int N, int C, Epilogue epi, float eps,
                   cudaStream_t stream);
void gemv_residual_w8a16(const bf16* x, const int8_t* q, const float* scale, const bf16* b, const bf16* res, bf16* y,
                         int N, int K, cudaStream_t stream);
void ln_gemv_qkv_w8a16(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const int8_t* q,
                       const float* scale, const bf16* b, bf16* h, bf16* qkv, int C, float eps,
                       const KvCacheTarget<bf16>& kv, cudaStream_t stream);

// v10_gemv_w4a16.cu: y (N) = epilogue(W~ · x + b) on INT4 weights (ch09.cuh's GemvW4Fn):
// codes, group scales and zero points as models/gpt2/quantize.h packs them.
GemvW4Fn gemv_w4a16;

// The fused QKV projection on INT4 weights (its KV-cache target as ln_gemv_qkv_w8a16's); with
// ch09.cuh's GemvW4Fn, LnGemvW4Fn and GemvResidualW4Fn, the four INT4 ops of v11, v14 and v15.
using LnGemvQkvW4Fn = void(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                           const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* qkv, int C, float eps,
                           const KvCacheTarget<bf16>& kv, cudaStream_t stream);

// v11_fused_decode_w4a16.cu: v6's ln_gemv, ln_gemv_qkv and gemv_residual on INT4 weights.
LnGemvW4Fn ln_gemv_w4a16;
LnGemvQkvW4Fn ln_gemv_qkv_w4a16;
GemvResidualW4Fn gemv_residual_w4a16;

// v14_w4a16_loads_ahead.cu: the same four INT4 ops (same arguments, same results within the
// ops' tolerances) with the weights requested before the input is waited for.
GemvW4Fn gemv_w4a16_ahead;
LnGemvW4Fn ln_gemv_w4a16_ahead;
LnGemvQkvW4Fn ln_gemv_qkv_w4a16_ahead;
GemvResidualW4Fn gemv_residual_w4a16_ahead;

// v15_w4a16_slab_mma.cu: the same four INT4 ops again, each CTA's rows copied into shared
// memory before the wait and their dot products on tensor cores.
GemvW4Fn gemv_w4a16_slab;
LnGemvW4Fn ln_gemv_w4a16_slab;
LnGemvQkvW4Fn ln_gemv_qkv_w4a16_slab;
GemvResidualW4Fn gemv_residual_w4a16_slab;
// ... and v6's three BF16 ops the same way where a CTA's rows fit in one slab with a CTA per SM
// (GPT-2 124M's layers; slab_bf16_fits says where, for an (N, K) matrix with 16-byte aligned
// rows); elsewhere they run v6's kernels.
bool slab_bf16_fits(int N, int K);
void ln_gemv_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w, const bf16* b,
                  bf16* h, bf16* y, int N, int C, Epilogue epi, float eps, cudaStream_t stream);
void ln_gemv_qkv_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w, const bf16* b,
                      bf16* h, bf16* qkv, int C, float eps, const KvCacheTarget<bf16>& kv, cudaStream_t stream);
void gemv_residual_slab(const bf16* x, const bf16* w, const bf16* b, const bf16* res, bf16* y, int N, int K,
                        cudaStream_t stream);

// v16_decode_attention_ahead.cu: the fused step's attention, one CTA per head with the head's
// cached keys and values copied into shared memory before the wait. qkv (3C): the token's
// query, key and value rows; caches [H][P][D]; *pos: the new position (the caches hold the
// keys before it; its own key and value are read from qkv); att (C). Returns false, launching
// nothing, where it does not apply (decode_attention_ahead_fits: head size 64, shared memory).
bool decode_attention_ahead_fits(int H, int D, int P);
bool decode_attention_ahead(const bf16* qkv, const bf16* k_cache, const bf16* v_cache, const int* pos, bf16* att, int H,
                            int D, int P, float scale, cudaStream_t stream);

// v9_persistent_decode.cu: one layer's weights and KV cache as the persistent kernel reads
// them (an array of L of these lives in device memory), ...
struct PersistentLayer {
  const bf16 *ln_1_w, *ln_1_b, *attn_w, *attn_b, *attn_proj_w, *attn_proj_b;
  const bf16 *ln_2_w, *ln_2_b, *fc_w, *fc_b, *fc_proj_w, *fc_proj_b;
  bf16 *k_cache, *v_cache;  // [H][P][D]
};
// ... why a model of these sizes cannot run it on this GPU ("" when it can), the scratch it
// needs (zeroed once: its grid barrier's counters start at 0 and return there), and the L
// layers of one decode step: x (C) = the residual stream after the last layer, from layer 0's
// pair resid + branch (the embedding's); qkv (3C) and fc (4C) are its working rows; the
// token's key and value go to position *pos of each layer's cache.
std::string persistent_decode_unsupported(int C, int H, int D);
size_t persistent_decode_scratch_bytes(int H);
void persistent_decode_layers(const PersistentLayer* layers, int L, const bf16* resid, const bf16* branch, bf16* x,
                              bf16* qkv, bf16* fc, const int* pos, int C, int H, int P, float eps, void* scratch,
                              cudaStream_t stream);

}  // namespace ch09::solution
