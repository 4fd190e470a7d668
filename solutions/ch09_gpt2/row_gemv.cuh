// The BF16 row GEMVs' shared parts (steps 6 and 15, decode/): their arguments, the input row
// staged in shared memory with the LayerNorm (stage_row), and the LM head's argmax keys and
// their merge across CTAs (merge_argmax). Both steps run CTAs of kThreads threads, so the
// block sums in stage_row and merge_argmax are written for that size.
//
// Everything here is internal to the file that includes it (an unnamed namespace), as it was
// when step 6 held it alone: its kernels keep their names.
#pragma once
#include <cstdint>

#include "device/reduce.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {  // NOLINT(google-build-namespaces): internal to each step's file, see above

using wb::block_sum;  // sums over a warp and a CTA, one barrier each (harness/device/reduce.cuh)
using wb::warp_sum;

constexpr int kWarps = 8, kThreads = 32 * kWarps;  // a CTA: 8 warps
constexpr int kMaxCtas = 1024;  // a row GEMV's grid at most (the argmax's workspace holds one key per CTA)

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
  int N, K;
  Epilogue epi;
  float eps;
  bool vec;             // 16-byte loads of W: K * sizeof(W) % 16 == 0 and W 16-byte aligned
  bool vec_row;         // 16-byte loads of x, r, gamma, beta (and stores of h): K * sizeof(T) % 16 == 0, all aligned
  KvCacheTarget<T> kv;  // kv.k_cache not null: y is the QKV row, its keys and values go to the cache too
  int32_t* index;       // kArgmax: the argmax of y (as stored), and its value
  float* value;
  ArgmaxWorkspace* ws;
};

// The CTA's input row into shared memory, as T: v = T(x + r) (the residual stream, rounded
// once), then with kNorm the LayerNorm of v. Ends with a barrier: every warp reads the whole
// row next. Each thread touches the same elements in every pass, so the passes need no
// barrier between them (block_sum's own barriers aside).
//
// The row is read in 16-byte pieces where it can be (a.vec_row): thread t takes the pieces t,
// t + kThreads, ... of x, r, gamma and beta, and requests its first piece of each of the four
// at once, before it uses any. At GPT-2's sizes (C <= 2048 BF16) that is every piece the
// thread needs, so the prologue waits for L2 once. Element by element (the other path, for
// rows that are not 16-byte aligned) each thread's loads wait in turn behind its stores to h,
// which the compiler must assume may alias x: about seven trips to L2 per pass at C = 1600,
// measured as ~2 us of every LayerNorm-fused GEMV on an H100.
template <class T, class W, bool kNorm>
__device__ __forceinline__ void stage_row(const RowGemvArgs<T, W>& a, T* s_row, float* red) {
  constexpr int kE = 16 / sizeof(T);             // elements per 16-byte piece
  const int count = a.vec_row ? a.K / kE : a.K;  // pieces, or elements
  const auto piece = [](const T* p, int i) { return *reinterpret_cast<const uint4*>(p + i * kE); };
  // This thread's first piece of gamma and beta: used in the last pass, requested now.
  uint4 g0 = make_uint4(0, 0, 0, 0), b0 = g0;
  if (kNorm && a.vec_row && static_cast<int>(threadIdx.x) < count) {
    g0 = piece(a.gamma, threadIdx.x);
    b0 = piece(a.beta, threadIdx.x);
  }
  float sum = 0.0f;
  for (int i = threadIdx.x; i < count; i += kThreads) {
    if (a.vec_row) {
      const uint4 xv = piece(a.x, i), rv = a.r != nullptr ? piece(a.r, i) : make_uint4(0, 0, 0, 0);
      const T* xe = reinterpret_cast<const T*>(&xv);
      const T* re = reinterpret_cast<const T*>(&rv);
      uint4 out;
      T* oe = reinterpret_cast<T*>(&out);
#pragma unroll
      for (int e = 0; e < kE; ++e) {
        float v = to_float(xe[e]);
        if (a.r != nullptr) v += to_float(re[e]);
        oe[e] = from_float<T>(v);
        if constexpr (kNorm) sum += to_float(oe[e]);
      }
      reinterpret_cast<uint4*>(s_row)[i] = out;
      if (a.h != nullptr && blockIdx.x == 0) reinterpret_cast<uint4*>(a.h)[i] = out;
    } else {
      float v = to_float(a.x[i]);
      if (a.r != nullptr) v += to_float(a.r[i]);
      const T vt = from_float<T>(v);
      s_row[i] = vt;
      if (a.h != nullptr && blockIdx.x == 0) a.h[i] = vt;
      if constexpr (kNorm) sum += to_float(vt);
    }
  }
  if constexpr (kNorm) {
    // Two passes (the mean, then the squared deviations): no cancellation when the mean is
    // large next to the spread, as a one-pass E[v^2] - E[v]^2 would suffer. These two read
    // shared memory only, element by element over this thread's own elements.
    const int per = a.vec_row ? kE : 1;
    const float mean = block_sum<kThreads>(sum, red) / static_cast<float>(a.K);
    float sq = 0.0f;
    for (int i = threadIdx.x; i < count; i += kThreads) {
      for (int e = 0; e < per; ++e) {
        const float d = to_float(s_row[i * per + e]) - mean;
        sq += d * d;
      }
    }
    const float rstd = rsqrtf(block_sum<kThreads>(sq, red + kWarps) / static_cast<float>(a.K) + a.eps);
    for (int i = threadIdx.x; i < count; i += kThreads) {
      if (a.vec_row) {
        const bool first = i == static_cast<int>(threadIdx.x);
        const uint4 gv = first ? g0 : piece(a.gamma, i), bv = first ? b0 : piece(a.beta, i);
        const T* ge = reinterpret_cast<const T*>(&gv);
        const T* be = reinterpret_cast<const T*>(&bv);
#pragma unroll
        for (int e = 0; e < kE; ++e) {
          T& v = s_row[i * kE + e];
          v = from_float<T>((to_float(v) - mean) * rstd * to_float(ge[e]) + to_float(be[e]));
        }
      } else {
        s_row[i] = from_float<T>((to_float(s_row[i]) - mean) * rstd * to_float(a.gamma[i]) + to_float(a.beta[i]));
      }
    }
  }
  __syncthreads();
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
  k = wb::warp_reduce(k, [](Key x, Key y) { return key_max(x, y); });
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

}  // namespace
}  // namespace ch09::solution
