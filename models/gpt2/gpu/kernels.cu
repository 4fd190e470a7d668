// The model's small kernels (kernels.cuh). One block per row or per (token, head); the
// decode shapes are tiny, so these favour plain and correct over clever.
#include <cuda_bf16.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/errors.cuh"
#include "device/math.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "kernels.cuh"

namespace gpt2::kernels {
namespace {

constexpr int kMaxD = 128;  // head size the attention kernel holds per thread block
constexpr int kAttnThreads = 128;

// grid (n), block (256): row t's token and position rows. The prompt's rows sit at consecutive
// positions from *pos (kRowPositions false); a batch's rows each at their own pos[t] (true).
template <class T, bool kRowPositions>
__global__ void embedding_kernel(const int32_t* tokens, const int* pos, const T* wte, const T* wpe, T* tok, T* posrows,
                                 int C) {
  const int t = blockIdx.x;
  const T* te = wte + size_t(tokens[t]) * C;
  const T* pe = wpe + size_t(kRowPositions ? pos[t] : *pos + t) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    tok[size_t(t) * C + c] = te[c];
    posrows[size_t(t) * C + c] = pe[c];
  }
}

template <class T>
__global__ void residual_add_kernel(const T* x, const T* r, T* h, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    h[i] = wb::from_float<T>(wb::to_float(x[i]) + wb::to_float(r[i]));
  }
}

// grid (n, H), block (min(D, 128) rounded to 32): token t, head h.
template <class T>
__global__ void kv_append_kernel(const T* qkv, T* k_cache, T* v_cache, const int* pos, int H, int D, int P) {
  const int t = blockIdx.x, h = blockIdx.y, C = H * D;
  const int p = *pos + t;
  const T* row = qkv + size_t(t) * 3 * C;
  T* kd = k_cache + (size_t(h) * P + p) * D;
  T* vd = v_cache + (size_t(h) * P + p) * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    kd[d] = row[C + h * D + d];
    vd[d] = row[2 * C + h * D + d];
  }
}

// grid (n, H), block (128), dynamic smem: P floats of scores + a few words.
// Query t of head h: s[j] = scale * q · k_j for j <= *pos + t; softmax; o = sum_j p_j v_j.
template <class T>
__global__ void __launch_bounds__(kAttnThreads)
    attention_kernel(const T* qkv, const T* k_cache, const T* v_cache, const int* pos, T* att, int H, int D, int P,
                     float scale) {
  extern __shared__ float s[];  // s[0 .. P): scores, then probabilities
  __shared__ float q[kMaxD];    // the query, FP32
  __shared__ float red[kAttnThreads / 32];
  const int t = blockIdx.x, h = blockIdx.y, C = H * D;
  const int keys = *pos + t + 1;  // causal: positions 0 .. pos + t
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = kAttnThreads / 32;
  const T* qrow = qkv + size_t(t) * 3 * C + h * D;
  for (int d = threadIdx.x; d < D; d += kAttnThreads) q[d] = wb::to_float(qrow[d]);
  __syncthreads();

  // Scores: warp w takes keys w, w + warps, ...; its lanes split the D products.
  const T* kh = k_cache + size_t(h) * P * D;
  for (int j = warp; j < keys; j += warps) {
    const T* kj = kh + size_t(j) * D;
    float dot = 0.0f;
    for (int d = lane; d < D; d += 32) dot += q[d] * wb::to_float(kj[d]);
    dot = wb::warp_sum(dot);
    if (lane == 0) s[j] = dot * scale;
  }
  __syncthreads();

  // The row's max, then exp and sum (FP32).
  float m = -INFINITY;
  for (int j = threadIdx.x; j < keys; j += kAttnThreads) m = fmaxf(m, s[j]);
  m = wb::block_reduce<kAttnThreads>(m, wb::Max{}, red);
  __syncthreads();  // red is reused below
  float l = 0.0f;
  for (int j = threadIdx.x; j < keys; j += kAttnThreads) {
    const float e = expf(s[j] - m);
    s[j] = e;
    l += e;
  }
  l = wb::block_sum<kAttnThreads>(l, red);
  const float inv = 1.0f / l;  // l >= 1: the max's own term is exp(0)

  // o[d] = sum_j p_j v_j[d]: thread d walks the keys (consecutive d, consecutive addresses).
  const T* vh = v_cache + size_t(h) * P * D;
  for (int d = threadIdx.x; d < D; d += kAttnThreads) {
    float o = 0.0f;
    for (int j = 0; j < keys; ++j) o += s[j] * wb::to_float(vh[size_t(j) * D + d]);
    att[size_t(t) * C + h * D + d] = wb::from_float<T>(o * inv);
  }
}

template <class T>
__global__ void to_float_kernel(const T* in, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = wb::to_float(in[i]);
}

__global__ void advance_kernel(const int32_t* index, int32_t* next, int32_t* token, int* pos, int32_t* history,
                               int advance_by) {
  const int32_t i = *index;
  *next = i;
  *token = i;
  *pos += advance_by;
  history[*pos] = i;
}

// grid (n, H), block (min(D, 128) rounded to 32): sequence b, head h.
template <class T>
__global__ void kv_append_rows_kernel(const T* qkv, T* k_cache, T* v_cache, T* q, const int* pos, int H, int D, int P) {
  const int b = blockIdx.x, h = blockIdx.y, C = H * D;
  const int p = pos[b];
  const T* row = qkv + size_t(b) * 3 * C;
  T* kd = k_cache + ((size_t(b) * H + h) * P + p) * D;  // [b][h][p][d]
  T* vd = v_cache + ((size_t(b) * H + h) * P + p) * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    kd[d] = row[C + h * D + d];
    vd[d] = row[2 * C + h * D + d];
    if (q != nullptr) q[size_t(b) * C + h * D + d] = row[h * D + d];
  }
}

__global__ void advance_rows_kernel(const int32_t* index, int32_t* next, int32_t* token, int* pos, int32_t* history,
                                    int n, int stride) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= n) return;
  const int32_t i = index[b];
  next[b] = i;
  token[b] = i;
  const int p = pos[b] + 1;
  pos[b] = p;
  history[size_t(b) * stride + p] = i;
}

// grid (n), block (256): row t of qkv (3C) split into row t of q, k and v (C each); block 0's
// thread 0 writes cu_seqlens = {0, n}.
__global__ void split_qkv_kernel(const __nv_bfloat16* qkv, __nv_bfloat16* q, __nv_bfloat16* k, __nv_bfloat16* v,
                                 int* cu_seqlens, int n, int C) {
  const int t = blockIdx.x;
  if (t == 0 && threadIdx.x == 0) {
    cu_seqlens[0] = 0;
    cu_seqlens[1] = n;
  }
  const __nv_bfloat16* row = qkv + size_t(t) * 3 * C;
  const size_t out = size_t(t) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    q[out + c] = row[c];
    k[out + c] = row[C + c];
    v[out + c] = row[2 * C + c];
  }
}

template <class T, bool kRowPositions>
void launch_embedding(const int32_t* tokens, const int* pos, const T* wte, const T* wpe, T* tok, T* posrows, int n,
                      int C, cudaStream_t stream) {
  embedding_kernel<T, kRowPositions><<<n, 256, 0, stream>>>(tokens, pos, wte, wpe, tok, posrows, C);
  CUDA_CHECK(cudaGetLastError());
}

unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = wb::ceil_div(n, threads);
  return static_cast<unsigned>(b < 4096 ? (b < 1 ? 1 : b) : 4096);
}

}  // namespace

template <class T>
void embedding(const int32_t* tokens, const int* pos, const T* wte, const T* wpe, T* tok, T* posrows, int n, int C,
               cudaStream_t stream) {
  launch_embedding<T, false>(tokens, pos, wte, wpe, tok, posrows, n, C, stream);
}

template <class T>
void residual_add(const T* x, const T* r, T* h, int64_t n, cudaStream_t stream) {
  residual_add_kernel<T><<<blocks_for(n, 256), 256, 0, stream>>>(x, r, h, n);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void kv_append(const T* qkv, T* k_cache, T* v_cache, const int* pos, int n, int H, int D, int P, cudaStream_t stream) {
  const int threads = D >= 128 ? 128 : ((D + 31) / 32) * 32;
  kv_append_kernel<T><<<dim3(n, H), threads, 0, stream>>>(qkv, k_cache, v_cache, pos, H, D, P);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void attention(const T* qkv, const T* k_cache, const T* v_cache, const int* pos, T* att, int n, int H, int D, int P,
               cudaStream_t stream) {
  if (D > kMaxD) throw std::invalid_argument("attention: head size " + std::to_string(D) + " is above 128");
  const size_t smem = sizeof(float) * size_t(P);
  if (smem > 48 * 1024) {
    CUDA_CHECK(cudaFuncSetAttribute(attention_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  }
  attention_kernel<T><<<dim3(n, H), kAttnThreads, smem, stream>>>(qkv, k_cache, v_cache, pos, att, H, D, P,
                                                                  1.0f / std::sqrt(float(D)));
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void to_float(const T* in, float* out, int n, cudaStream_t stream) {
  to_float_kernel<T><<<blocks_for(n, 256), 256, 0, stream>>>(in, out, n);
  CUDA_CHECK(cudaGetLastError());
}

void split_qkv(const __nv_bfloat16* qkv, __nv_bfloat16* q, __nv_bfloat16* k, __nv_bfloat16* v, int* cu_seqlens, int n,
               int C, cudaStream_t stream) {
  if (n < 1) return;
  split_qkv_kernel<<<n, 256, 0, stream>>>(qkv, q, k, v, cu_seqlens, n, C);
  CUDA_CHECK(cudaGetLastError());
}

void advance(const int32_t* index, int32_t* next, int32_t* token, int* pos, int32_t* history, int advance_by,
             cudaStream_t stream) {
  advance_kernel<<<1, 1, 0, stream>>>(index, next, token, pos, history, advance_by);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void embedding_rows(const int32_t* tokens, const int* pos, const T* wte, const T* wpe, T* tok, T* posrows, int n, int C,
                    cudaStream_t stream) {
  launch_embedding<T, true>(tokens, pos, wte, wpe, tok, posrows, n, C, stream);
}

template <class T>
void kv_append_rows(const T* qkv, T* k_cache, T* v_cache, T* q, const int* pos, int n, int H, int D, int P,
                    cudaStream_t stream) {
  const int threads = D >= 128 ? 128 : ((D + 31) / 32) * 32;
  kv_append_rows_kernel<T><<<dim3(n, H), threads, 0, stream>>>(qkv, k_cache, v_cache, q, pos, H, D, P);
  CUDA_CHECK(cudaGetLastError());
}

void advance_rows(const int32_t* index, int32_t* next, int32_t* token, int* pos, int32_t* history, int n, int stride,
                  cudaStream_t stream) {
  advance_rows_kernel<<<(n + 127) / 128, 128, 0, stream>>>(index, next, token, pos, history, n, stride);
  CUDA_CHECK(cudaGetLastError());
}

#define GPT2_KERNELS(T)                                                                                            \
  template void embedding<T>(const int32_t*, const int*, const T*, const T*, T*, T*, int, int, cudaStream_t);      \
  template void residual_add<T>(const T*, const T*, T*, int64_t, cudaStream_t);                                    \
  template void kv_append<T>(const T*, T*, T*, const int*, int, int, int, int, cudaStream_t);                      \
  template void attention<T>(const T*, const T*, const T*, const int*, T*, int, int, int, int, cudaStream_t);      \
  template void to_float<T>(const T*, float*, int, cudaStream_t);                                                  \
  template void embedding_rows<T>(const int32_t*, const int*, const T*, const T*, T*, T*, int, int, cudaStream_t); \
  template void kv_append_rows<T>(const T*, T*, T*, T*, const int*, int, int, int, int, cudaStream_t);
GPT2_KERNELS(float)
GPT2_KERNELS(__nv_bfloat16)
#undef GPT2_KERNELS

}  // namespace gpt2::kernels
