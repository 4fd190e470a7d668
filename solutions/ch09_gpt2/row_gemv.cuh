// What the fused decode step's GEMVs share (v6_fused_decode.cu, v9_stream_gemv.cu): the
// arguments of a row GEMV, the input row staged in shared memory (with its LayerNorm), how a
// 16-byte piece of a row of W meets x (BF16, FP32 or int8 weights), the row's epilogue, the
// KV-cache store, and the argmax's keys and last-CTA merge. The kernels that use them differ
// only in how the rows of W reach the SM.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution::row_gemv {

constexpr int kWarps = 8, kThreads = 32 * kWarps;  // a CTA: 8 warps
constexpr int kMaxCtas = 1024;  // a row GEMV's grid at most (the argmax's workspace holds one key per CTA)
constexpr int kMaxRow = 8192;   // C (or K) at most: the input row lives in shared memory (32 KB in FP32)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;  // every lane holds the sum
}

// The sum of one value per thread over the CTA; every thread gets it. `red`: kWarps floats
// of shared memory, free again when this returns.
__device__ __forceinline__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += red[w];
  __syncthreads();  // every thread has read red before the next call writes it
  return total;
}

// --- how a GEMV reads its weights: W = T (BF16 or FP32), or W = int8_t with T = BF16 ---------
// A 16-byte piece of a row of W holds 16 / sizeof(W) weights (8 BF16, 4 FP32, 16 int8). x is
// read as 16-byte pieces of T too: from the row staged in shared memory (ln_gemv), or from
// global memory through the read-only cache (gemv_residual).
struct SharedPieces {
  const uint4* p;
  __device__ __forceinline__ uint4 operator[](int i) const { return p[i]; }
};
struct GlobalPieces {
  const uint4* p;
  __device__ __forceinline__ uint4 operator[](int i) const { return __ldg(p + i); }
};

template <class T, class W>
constexpr bool kValidWeights = std::is_same_v<W, T> || (std::is_same_v<W, int8_t> && std::is_same_v<T, bf16>);

// Piece p of a row (w) times the matching elements of x, in FP32: on T weights step 4's
// dot16 with x's piece p; on int8 weights step 5's dot16_w8 with x's pieces 2p and 2p + 1
// (16 BF16), unscaled.
template <class T, class W, class X>
__device__ __forceinline__ float dot_piece(const uint4& w, const X& x, int p) {
  if constexpr (std::is_same_v<W, int8_t>) {
    return dot16_w8(w, x[2 * p], x[2 * p + 1]);
  } else {
    return dot16(w, x[p], T{});
  }
}

// A row's sum times the row's scale (int8 weights: once per row), or the sum as it is.
template <class W>
__device__ __forceinline__ float scaled(float sum, const float* scale, int n) {
  if constexpr (std::is_same_v<W, int8_t>) {
    return sum * scale[n];
  } else {
    return sum;
  }
}

// --- argmax keys: chapter 7's order as one unsigned 64-bit number -----------------------------
//   key = ordered(value) << 32 | ~index
// ordered() maps a float to a uint32 of the same order (negative floats: all bits flipped;
// positive ones: the sign bit set; -0 counted as +0), ~index makes the lower index the larger
// key, so the largest key is the argmax with ties to the lower index. Every real key is
// above 0, which therefore means "no row yet".
using Key = unsigned long long;

__device__ __forceinline__ uint32_t ordered_bits(float v) {
  const uint32_t u = __float_as_uint(__fadd_rn(v, 0.0f));  // -0 + 0 = +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ Key make_key(float v, int n) { return (Key(ordered_bits(v)) << 32) | Key(~uint32_t(n)); }
__device__ __forceinline__ int key_index(Key k) { return int(~uint32_t(k & 0xffffffffu)); }
__device__ __forceinline__ float key_value(Key k) {
  const uint32_t o = uint32_t(k >> 32);
  return __uint_as_float((o & 0x80000000u) ? (o & 0x7fffffffu) : ~o);  // ordered_bits undone
}
__device__ __forceinline__ Key key_max(Key a, Key b) { return a > b ? a : b; }

// The argmax's workspace: a ticket counter (zero between calls) and one key per CTA.
struct ArgmaxWorkspace {
  unsigned int done;
  unsigned int pad;
  Key part[kMaxCtas];
};

// --- the row GEMV: y (N) = epilogue(W (N, K) · row + b), row = [LayerNorm](x [+ r]) ----------

template <class T, class W = T>
struct RowGemvArgs {
  const T* x;          // (K) the input
  const T* r;          // (K) added to x first (the residual pair), or null
  const T* gamma;      // (K) the LayerNorm's scale (kNorm)
  const T* beta;       // (K) the LayerNorm's shift (kNorm)
  T* h;                // (K) h = T(x + r), written by CTA 0; or null
  const W* w;          // (N, K) row-major: row n holds output n's K weights (W = int8_t: q)
  const float* scale;  // W = int8_t: (N), W[n][k] ~ q[n][k] * scale[n]; else null
  const T* b;          // (N), or null for Epilogue::None
  T* y;                // (N)
  const T* res;        // (N) added in the epilogue (the output projections; y may be res), or null
  int N, K;
  Epilogue epi;
  float eps;
  bool vec;            // 16-byte loads of W: K * sizeof(W) % 16 == 0 and W 16-byte aligned
  KvCacheTarget<T> kv; // kv.k_cache not null: y is the QKV row, its keys and values go to the cache too
  int32_t* index;      // kArgmax: the argmax of y (as stored), and its value
  float* value;
  ArgmaxWorkspace* ws;
};

// The CTA's input row into shared memory, as T: v = T(x + r) (the residual stream, rounded
// once), then with kNorm the LayerNorm of v. Ends with a barrier: every warp reads the whole
// row next. Each thread touches the same elements k = tid, tid + kThreads, ... in every pass,
// so the passes need no barrier between them (block_sum's own barriers aside).
template <class T, class W, bool kNorm>
__device__ __forceinline__ void stage_row(const RowGemvArgs<T, W>& a, T* s_row, float* red) {
  float sum = 0.0f;
  for (int k = threadIdx.x; k < a.K; k += kThreads) {
    float v = to_f32(a.x[k]);
    if (a.r != nullptr) v += to_f32(a.r[k]);
    const T vt = from_f32<T>(v);
    s_row[k] = vt;
    if (a.h != nullptr && blockIdx.x == 0) a.h[k] = vt;
    if constexpr (kNorm) sum += to_f32(vt);
  }
  if constexpr (kNorm) {
    // Two passes (the mean, then the squared deviations): no cancellation when the mean is
    // large next to the spread, as a one-pass E[v^2] - E[v]^2 would suffer.
    const float mean = block_sum(sum, red) / static_cast<float>(a.K);
    float sq = 0.0f;
    for (int k = threadIdx.x; k < a.K; k += kThreads) {
      const float d = to_f32(s_row[k]) - mean;
      sq += d * d;
    }
    const float rstd = rsqrtf(block_sum(sq, red) / static_cast<float>(a.K) + a.eps);
    for (int k = threadIdx.x; k < a.K; k += kThreads) {
      s_row[k] = from_f32<T>((to_f32(s_row[k]) - mean) * rstd * to_f32(a.gamma[k]) + to_f32(a.beta[k]));
    }
  }
  __syncthreads();
}

// The QKV row's elements C .. 2C are the token's key, 2C .. 3C its value (head h = c / D,
// element d = c % D): stored at position *pos of the layer's cache, [H][P][D].
template <class T>
__device__ __forceinline__ void store_kv(const KvCacheTarget<T>& kv, int n, T v) {
  const int C = kv.H * kv.D;
  if (n < C) return;  // a query element
  const bool is_v = n >= 2 * C;
  const int c = n - (is_v ? 2 * C : C), h = c / kv.D, d = c % kv.D;
  T* cache = is_v ? kv.v_cache : kv.k_cache;
  cache[(size_t(h) * kv.P + *kv.pos) * kv.D + d] = v;
}

// The argmax's merge, after every warp of the CTA has its best key: the CTA's best goes to
// the workspace, then the CTA takes a ticket. The CTA that takes the last ticket sees every
// other CTA's key (each was written, then fenced, before its ticket was taken) and merges them.
// warp_best: kWarps keys of shared memory; last_cta: a shared flag.
template <class T, class W>
__device__ __forceinline__ void merge_argmax(const RowGemvArgs<T, W>& a, Key best, Key* warp_best, bool* last_cta) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_best[warp] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    Key cta = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) cta = key_max(cta, warp_best[w]);
    a.ws->part[blockIdx.x] = cta;
    __threadfence();  // the key is visible to every CTA before the ticket says so
    *last_cta = atomicAdd(&a.ws->done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!*last_cta) return;  // the same answer for the whole CTA
  __threadfence();
  const volatile Key* part = a.ws->part;  // volatile: read from L2, never a stale L1 line
  Key k = 0;
  for (int i = threadIdx.x; i < static_cast<int>(gridDim.x); i += kThreads) k = key_max(k, part[i]);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) k = key_max(k, __shfl_xor_sync(0xffffffffu, k, off));
  if (lane == 0) warp_best[warp] = k;  // thread 0 finished reading warp_best before the last barrier
  __syncthreads();
  if (threadIdx.x == 0) {
    Key all = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) all = key_max(all, warp_best[w]);
    *a.index = key_index(all);
    *a.value = key_value(all);
    a.ws->done = 0;  // ready for the next call, and for the next replay of a graph
  }
}

// Row n's output from its sum over K: [x the row's scale,] then the residual add
// (y = T(res + (sum + b))) or the bias / GELU epilogue, rounded once; stored, and with a KV
// target also written to the cache. Called by one thread per row; returns the stored value.
template <class T, class W>
__device__ __forceinline__ T finish_row(const RowGemvArgs<T, W>& a, int n, float sum) {
  const float s = scaled<W>(sum, a.scale, n);
  const T out = a.res != nullptr ? from_f32<T>(to_f32(a.res[n]) + (s + to_f32(a.b[n]))) : epilogue(s, a.b, n, a.epi);
  a.y[n] = out;
  if (a.kv.k_cache != nullptr) store_kv(a.kv, n, out);
  return out;
}


// --- host side ---------------------------------------------------------------------------

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline void require_row(const char* name, int K) {
  if (K > kMaxRow) {
    throw std::invalid_argument(std::string(name) + " = " + std::to_string(K) + ": the input row is staged in shared " +
                                "memory, which holds at most " + std::to_string(kMaxRow) + " elements");
  }
}

template <class T, class W>
RowGemvArgs<T, W> row_args(const T* x, const T* r, const T* gamma, const T* beta, T* h, const W* w, const T* b, T* y,
                           int N, int K, Epilogue epi, float eps) {
  RowGemvArgs<T, W> a{};
  a.x = x, a.r = r, a.gamma = gamma, a.beta = beta, a.h = h, a.w = w, a.b = b, a.y = y;
  a.N = N, a.K = K, a.epi = epi, a.eps = eps;
  return a;
}

inline void require_workspace(const char* name, const void* workspace) {
  if (workspace == nullptr) {
    throw std::invalid_argument(std::string(name) + ": needs gemv_argmax_workspace_bytes() of workspace, zeroed once");
  }
}

inline void require_res(const char* name, const void* res) {
  if (res == nullptr) throw std::invalid_argument(std::string("res is null: ") + name + " adds the residual in its epilogue");
}

inline void require_scale(const float* scale) {
  if (scale == nullptr) throw std::invalid_argument("scale is null: INT8 weights need one FP32 scale per row");
}

template <class T>
void require_kv(const char* name, int C, const KvCacheTarget<T>& kv) {
  if (kv.k_cache == nullptr || kv.v_cache == nullptr || kv.pos == nullptr || kv.H * kv.D != C || kv.P < 1) {
    throw std::invalid_argument(std::string(name) + ": the cache needs k and v, a position, and H * D = C (H = " +
                                std::to_string(kv.H) + ", D = " + std::to_string(kv.D) + ", C = " + std::to_string(C) +
                                ")");
  }
}

}  // namespace ch09::solution::row_gemv
