// Step 6 — the fused decode step: one token (batch 1) in fewer, larger kernels.
//
// At batch 1 a decode step reads every weight once for one multiply-add, so its floor is
// (weight bytes + KV-cache bytes) / copy bandwidth. Step 4's GEMV already streams W near
// that speed; what separates the step from the floor is everything around the GEMVs: a
// LayerNorm kernel that reads a row and writes it back only for the next GEMV to read it, a
// residual add handed from one kernel to the next, a kv_append of its own, a to_float and a
// top-k over the logits — and every one of those kernels waits for the one before it. This
// step fuses them into the GEMVs:
//
//   ln_gemv        the LayerNorm in the GEMV's PROLOGUE. Every CTA reads the C-element input
//                  row (x + r: at most 1600 elements, 3.2 KB, a hit in L2), computes its mean
//                  and rstd (FP32, two passes over shared memory), stores the normalised row
//                  in shared memory (rounded to T, as the unfused LayerNorm stores it), and
//                  multiplies its rows of W by it; bias (+ GELU) in the epilogue. Recomputing
//                  the statistics per CTA costs C reads from L2 against the kWarps * C weights
//                  the CTA streams from DRAM, and the first row's weights are requested BEFORE
//                  the LayerNorm, so that they are in flight while it runs.
//                  h = x + r, the new residual stream, is written by CTA 0 alone: 3.2 KB of
//                  stores, too few to be worth splitting up between the CTAs.
//                  ln_gemv_qkv also stores the token's key and value (rows C .. 3C of its
//                  output) into the layer's KV cache at *pos: the model's kv_append, folded
//                  into the epilogue.
//   gemv_residual  the two output projections: y = res + W · x + b, rounded once. The block's
//                  residual add is in the epilogue, so the block's output is ready for the next
//                  LayerNorm (a prologue again) with no pass of its own. These GEMVs have only
//                  N = C rows (768 for 124M): one warp per row would leave a 132-SM GPU with
//                  too few loads in flight, so 4 or 8 warps share a row (split K) and add their
//                  partial sums through shared memory, in a fixed order.
//   gemv_argmax    the LM head and the argmax in ONE kernel: a CTA keeps the best (value,
//                  index) of its rows as one 64-bit key (chapter 7's order: the larger value,
//                  equal values by the lower index), writes it to a workspace, and the last CTA
//                  to finish (a ticket counter) merges the keys and resets the counter for the
//                  next call. The argmax is of the logits AS STORED (rounded to T), as the
//                  unfused path's argmax sees them. ln_gemv_argmax folds ln_f in as above.
//
// All rows of a row GEMV (ln_gemv, gemv_argmax) come from one kernel shape: 8 warps per CTA,
// one row per warp per step, and no more CTAs than the GPU holds at once, which loop over
// groups of 8 rows (the LM head's 50257 rows on an H100: 528 CTAs of about 12 groups each,
// so the LayerNorm prologue is paid 528 times, not 6283). The dot product is step 4's: lane
// l takes the 16-byte pieces l, l + 32, ... of the row (one coalesced 512-byte read per warp
// and step), in the same order, so the sums match step 4's bit for bit on the same row.
//
// INT8 weights (W8A16, gpt2 --int8 --decode=fused): ln_gemv, ln_gemv_qkv and gemv_residual
// also read W as step 5 does, int8 q (N, K) with one FP32 scale per row (W[n][k] ~ q[n][k] *
// scale[n]): ln_gemv_w8a16, ln_gemv_qkv_w8a16, gemv_residual_w8a16 (BF16 activations). The
// kernels are the same ones, with the weights' type W a template parameter (T, or int8_t);
// what changes is only how a 16-byte piece of a row is read and multiplied:
//   * a piece holds 16 int8 weights instead of 8 BF16, so it meets TWO 16-byte pieces of x
//     (x's pieces 2p and 2p + 1 for piece p of the row), and a warp's step reads 512 bytes of
//     the row as before, which is now 512 weights;
//   * its dot product is step 5's dot16_w8 (epilogue.cuh): int8 -> FP32 by a byte permute and
//     one add, FP32 products, the same order; a lane sums its pieces l, l + 32, ... as step 5's
//     lane does, then the warp's shuffle sum, so the row's sum is step 5's on the same x;
//   * the row's scale multiplies that sum ONCE, before the epilogue (gemv_residual: the sum of
//     the warps' partial sums), which is then the same as on BF16 weights;
//   * the prefetch before the wait, the first row's pieces requested before the LayerNorm and
//     the loop read q's bytes: half those of BF16 weights (2 pieces per lane ahead instead of
//     4, and a loop unrolled 3 times instead of 4: kAheadOf). A row is read with 16-byte loads when
//     K % 16 == 0 (GPT-2's K all are), else one weight per lane and step from k = 0 (step 5
//     takes the 16-byte loads on such a row when it happens to start aligned: on those shapes
//     the two sum in different orders).
// The LM head (gemv_argmax) stays BF16: wte is the embedding too, and is not quantized.
//
// Between kernels (Hopper and later): inside a PdlChain (the model's fused step opens one) every
// kernel here is launched as a programmatic dependent of the one before it
// (harness/device/pdl.cuh). Its CTAs may start while the previous kernel's
// last CTAs still run: they ask L2 for their first rows of W and load the first pieces of a row
// into registers (constant weights, safe to read early), then wait for the previous kernel to
// end before they touch x. Each CTA lets the next
// kernel start once its rows are done. In a step of hundreds of short kernels this hides most
// of the gap between one kernel's tail and the next one's first loads.
//
// Run: build/ch09/bin/ch09_bench --op=ln_gemv/bf16   (and gemv_residual/bf16, gemv_argmax/bf16,
//      ln_gemv_w8a16/bf16, gemv_residual_w8a16/bf16: their rows beside the BF16 ops' on the same shapes)
//      build/ch09/bin/gpt2 --weights=124M.safetensors --prompt-len=512 --new=128 --decode=fused [--int8]
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "runtime/errors.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch09::solution {
namespace {

using wb::block_sum;  // sums over a warp and a CTA, one barrier each (harness/device/reduce.cuh)
using wb::warp_sum;

constexpr int kWarps = 8, kThreads = 32 * kWarps;  // a CTA: 8 warps
constexpr int kAhead = 4;       // 16-byte pieces per lane requested before the LayerNorm (1024 BF16 of a row)
constexpr int kMaxCtas = 1024;  // a row GEMV's grid at most (the argmax's workspace holds one key per CTA)
constexpr int kMaxRow = 8192;   // C (or K) at most: the input row lives in shared memory (32 KB in FP32)

// Before waiting for the previous kernel: the CTA's first `rows` rows of W (from row n0) into
// L2, one 128-byte line per thread and step (W's bytes: int8 weights take half those of BF16).
template <class W>
__device__ __forceinline__ void prefetch_rows(const W* w, long long n0, int rows, int N, int K, int threads) {
  const long long end = n0 + rows < N ? n0 + rows : N;
  if (end <= n0) return;
  const char* first = reinterpret_cast<const char*>(w + n0 * K);
  const long long bytes = (end - n0) * K * static_cast<long long>(sizeof(W));
  for (long long off = static_cast<long long>(threadIdx.x) * 128; off < bytes; off += 128LL * threads) {
    wb::pdl_prefetch_l2(first + off);
  }
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

// The row GEMV's pieces per lane requested before the LayerNorm, and the unroll of its loop over
// a row. On int8 weights each piece in flight needs two pieces of x beside it (12 registers, not
// 8): 4 pieces ahead spill at the 64 registers of __launch_bounds__, and so does 2 ahead with an
// unroll of 4 (a little); 2 and 3 do not. 2 pieces ahead are 1024 int8 weights of the row, as
// many weights as BF16's 4 pieces, in half the bytes.
template <class W>
constexpr int kAheadOf = std::is_same_v<W, int8_t> ? 2 : kAhead;
template <class W>
constexpr int kUnrollOf = std::is_same_v<W, int8_t> ? 3 : 4;

// A row's scale (int8 weights), or 1; and a row's sum times it (int8 weights: once per row).
template <class W>
__device__ __forceinline__ float row_scale(const float* scale, int n) {
  if constexpr (std::is_same_v<W, int8_t>) {
    return scale[n];
  } else {
    return 1.0f;
  }
}
template <class W>
__device__ __forceinline__ float scaled(float sum, float scale) {
  if constexpr (std::is_same_v<W, int8_t>) {
    return sum * scale;
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

// grid (at most ceil(N / kWarps): launch_row_gemv), block (kThreads), dynamic shared memory: the row,
// K elements of T (16-byte aligned). CTA c takes the groups of kWarps rows g = c, c + grid,
// c + 2 grid, ...; warp w of a group owns row n = g * kWarps + w.
// At most 64 registers (__launch_bounds__'s 4 CTAs per SM): 32 warps per SM stream W.
template <class T, class W, bool kNorm, bool kArgmax>
__global__ void __launch_bounds__(kThreads, 4) row_gemv_kernel(const RowGemvArgs<T, W> a) {
  static_assert(kValidWeights<T, W>, "W is T, or int8 with BF16 activations");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* s_row = reinterpret_cast<T*>(smem_raw);  // (K) the input row, staged once per CTA
  __shared__ float red[2 * kWarps];           // block_sum: two exchange arrays
  __shared__ Key warp_best[kWarps];           // kArgmax: each warp's best key
  __shared__ bool last_cta;                   // kArgmax: this CTA took the last ticket
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  constexpr int kPer = 16 / sizeof(W);  // weights per 16-byte piece of a row (8 BF16, 16 int8)
  const int pieces = a.K / kPer;        // whole pieces of a row (vec: K % kPer == 0)

  // 0. Before waiting for the previous kernel (weights are constants, safe to read early): the
  //    CTA's first two groups of rows (g = blockIdx.x and blockIdx.x + gridDim.x: all of a CTA's
  //    rows in the layers' GEMVs, a start in the LM head's) into L2, and this warp's first
  //    kAhead (int8: 2) pieces per lane of its first row into registers, so that DRAM is busy
  //    while the previous kernel ends and the LayerNorm below runs (they are used in step 3).
  prefetch_rows(a.w, static_cast<long long>(blockIdx.x) * kWarps, kWarps, a.N, a.K, kThreads);
  prefetch_rows(a.w, (static_cast<long long>(blockIdx.x) + gridDim.x) * kWarps, kWarps, a.N, a.K, kThreads);
  constexpr int kAh = kAheadOf<W>, kUnroll = kUnrollOf<W>;
  uint4 ahead[kAh];
#pragma unroll
  for (int i = 0; i < kAh; ++i) ahead[i] = make_uint4(0, 0, 0, 0);
  {
    const int n = blockIdx.x * kWarps + warp;
    if (a.vec && n < a.N) {
      const uint4* w4 = reinterpret_cast<const uint4*>(a.w + size_t(n) * a.K);
#pragma unroll
      for (int i = 0; i < kAh; ++i) {
        const int p = lane + 32 * i;
        if (p < pieces) ahead[i] = __ldg(w4 + p);
      }
    }
  }

  // 1. Wait for the previous kernel: x (and r) are its output.
  wb::pdl_wait();

  // 2. The input row, normalised, into shared memory.
  stage_row<T, W, kNorm>(a, s_row, red);

  // 3. The rows: a warp's dot product, the shuffle sum, the epilogue. No barrier in this loop:
  //    a warp whose row is past N just skips it.
  [[maybe_unused]] Key best = 0;  // kArgmax: the best key of this warp's rows
  const SharedPieces x4{reinterpret_cast<const uint4*>(s_row)};
  for (long long g = blockIdx.x; g * kWarps < a.N; g += gridDim.x) {
    const int n = static_cast<int>(g * kWarps) + warp;
    if (n >= a.N) continue;  // n is the same for the warp's 32 lanes
    const W* row = a.w + size_t(n) * a.K;
    // The row's bias (and INT8 scale) are requested now and used after the dot product: their
    // trips to L2 overlap the row's, instead of following them.
    const float bias = a.epi != Epilogue::None ? to_float(a.b[n]) : 0.0f;
    const float sc = row_scale<W>(a.scale, n);
    float acc = 0.0f;
    if (a.vec) {
      const uint4* w4 = reinterpret_cast<const uint4*>(row);
      int p0 = lane;
      if (g == blockIdx.x) {  // the first group: its first pieces are in registers already
#pragma unroll
        for (int i = 0; i < kAh; ++i) {
          const int p = lane + 32 * i;
          if (p < pieces) acc += dot_piece<T, W>(ahead[i], x4, p);
        }
        p0 = lane + 32 * kAh;
      }
#pragma unroll kUnroll
      for (int p = p0; p < pieces; p += 32) acc += dot_piece<T, W>(__ldg(w4 + p), x4, p);
    } else {
      for (int k = lane; k < a.K; k += 32) acc += to_float(row[k]) * to_float(s_row[k]);
    }
    acc = warp_sum(acc);
    const T out = epilogue_value<T>(scaled<W>(acc, sc), bias, a.epi);  // [x scale,] + bias, GELU, one rounding
    if (lane == 0) {
      a.y[n] = out;
      if (a.kv.k_cache != nullptr) store_kv(a.kv, n, out);
    }
    if constexpr (kArgmax) best = key_max(best, make_key(to_float(out), n));  // every lane: the same key
  }
  wb::pdl_trigger();  // this CTA's rows are done: the next kernel may start its CTAs
  if constexpr (kArgmax) merge_argmax(a, best, warp_best, &last_cta);
}

// --- gemv_residual: y (N) = res (N) + W (N, K) · x (K) + b (N) ---------------------------------
// (int8 weights: y = res + scale * (q · x) + b.)

// grid (ceil(N / kRows)), block (kThreads). kSplit warps share row n = blockIdx.x * kRows +
// warp / kSplit: warp j = warp % kSplit of them takes the pieces j * 32 + lane, then every
// 32 * kSplit-th (consecutive warps, consecutive 512-byte reads). y may be res itself: each
// res[n] is read by the one thread that then writes y[n]. scale: W = int8_t only.
template <class T, class W, int kSplit>
__global__ void __launch_bounds__(kThreads) gemv_residual_kernel(const T* x, const W* w, const float* scale, const T* b,
                                                                 const T* res, T* y, int N, int K, bool vec) {
  static_assert(kWarps % kSplit == 0, "whole rows per CTA");
  static_assert(kValidWeights<T, W>, "W is T, or int8 with BF16 activations");
  constexpr int kRows = kWarps / kSplit;
  __shared__ float partial[kWarps];  // each warp's sum over its share of the row
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, j = warp % kSplit;
  const int n = blockIdx.x * kRows + warp / kSplit;
  const bool writer = n < N && j == 0 && lane == 0;  // the thread that finishes row n
  prefetch_rows(w, static_cast<long long>(blockIdx.x) * kRows, kRows, N, K, kThreads);
  // The epilogue's operands are requested early, so that their trips to L2 overlap the row's:
  // the bias and scale (constants) before the wait, res[n] (the previous kernels') after it.
  const float bias = writer ? to_float(b[n]) : 0.0f, sc = writer ? row_scale<W>(scale, n) : 0.0f;
  wb::pdl_wait();  // x and res are the previous kernels' outputs
  const float resid = writer ? to_float(res[n]) : 0.0f;
  float acc = 0.0f;
  if (n < N) {  // no early return: every thread reaches the barrier below
    const W* row = w + size_t(n) * K;
    if (vec) {
      constexpr int kPer = 16 / sizeof(W);  // weights per 16-byte piece of a row
      const int pieces = K / kPer;
      const uint4* w4 = reinterpret_cast<const uint4*>(row);
      const GlobalPieces x4{reinterpret_cast<const uint4*>(x)};
#pragma unroll 4
      for (int p = j * 32 + lane; p < pieces; p += 32 * kSplit) acc += dot_piece<T, W>(__ldg(w4 + p), x4, p);
    } else {
      for (int k = j * 32 + lane; k < K; k += 32 * kSplit) acc += to_float(row[k]) * to_float(x[k]);
    }
    acc = warp_sum(acc);
  }
  if (lane == 0) partial[warp] = acc;
  wb::pdl_trigger();
  __syncthreads();
  if (writer) {
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kSplit; ++i) sum += partial[warp + i];  // a fixed order: the same bits every run
    y[n] = from_float<T>(resid + (scaled<W>(sum, sc) + bias));  // one rounding
  }
}

// --- launchers -----------------------------------------------------------------------------

using wb::aligned16;  // harness/device/vec.cuh

void require_row(const char* name, int K) {
  if (K > kMaxRow) {
    throw std::invalid_argument(std::string(name) + " = " + std::to_string(K) + ": the input row is staged in shared " +
                                "memory, which holds at most " + std::to_string(kMaxRow) + " elements");
  }
}

// The row GEMV's grid: one CTA per group of kWarps rows, but no more CTAs than fit on the GPU
// at once (SMs x CTAs per SM, from the occupancy calculator; at most kMaxCtas): a grid of one
// wave leaves no second wave running on a few SMs, and each CTA pays for its LayerNorm
// prologue once however many rows it then loops over.
template <class T, class W, bool kNorm, bool kArgmax>
void launch_row_gemv(RowGemvArgs<T, W> a, cudaStream_t stream) {
  a.vec = (size_t(a.K) * sizeof(W)) % 16 == 0 && aligned16(a.w);
  a.vec_row = (size_t(a.K) * sizeof(T)) % 16 == 0 && aligned16(a.x) && (a.r == nullptr || aligned16(a.r)) &&
              (!kNorm || (aligned16(a.gamma) && aligned16(a.beta))) && (a.h == nullptr || aligned16(a.h));
  auto* kernel = &row_gemv_kernel<T, W, kNorm, kArgmax>;
  const size_t smem = (size_t(a.K) * sizeof(T) + 15) / 16 * 16;  // at most 32 KB: no opt-in needed
  const long long groups = (static_cast<long long>(a.N) + kWarps - 1) / kWarps;
  const long long resident = std::clamp<long long>(wb::blocks_per_gpu(kernel, kThreads, smem), 1, kMaxCtas);
  const unsigned grid = static_cast<unsigned>(std::min(groups, resident));
  wb::launch_chained(kernel, grid, kThreads, smem, stream, a);
}

template <class T, class W>
RowGemvArgs<T, W> row_args(const T* x, const T* r, const T* gamma, const T* beta, T* h, const W* w, const T* b, T* y,
                           int N, int K, Epilogue epi, float eps) {
  RowGemvArgs<T, W> a{};
  a.x = x, a.r = r, a.gamma = gamma, a.beta = beta, a.h = h, a.w = w, a.b = b, a.y = y;
  a.N = N, a.K = K, a.epi = epi, a.eps = eps;
  return a;
}

void require_scale(const float* scale) {
  if (scale == nullptr) throw std::invalid_argument("scale is null: INT8 weights need one FP32 scale per row");
}

template <class T>
void require_kv(const char* name, int C, const KvCacheTarget<T>& kv) {
  if (kv.k_cache == nullptr || kv.v_cache == nullptr || kv.pos == nullptr || kv.H * kv.D != C || kv.P < 1) {
    throw std::invalid_argument(std::string(name) +
                                ": the cache needs k and v, a position, and H * D = C (H = " + std::to_string(kv.H) +
                                ", D = " + std::to_string(kv.D) + ", C = " + std::to_string(C) + ")");
  }
}

// gemv_residual's grid and split: long rows (K >= 2048: the MLP's projection, K = 4C) are
// split 8 ways, one row per CTA; shorter ones (the attention's projection, K = C) 4 ways, 2
// rows per CTA. More, smaller CTAs than one row per warp: the GPU's CTA scheduler then evens
// out the SMs' shares, where a few large CTAs leave some SMs a row behind the others (GPT-2
// 1.5B on an H100: 2.5 % more tokens/s than splits of 4 and 2). INT8 rows take the split of
// BF16 rows of the same K.
template <class T, class W>
void launch_gemv_residual(const T* x, const W* w, const float* scale, const T* b, const T* res, T* y, int N, int K,
                          cudaStream_t stream) {
  const bool vec = (size_t(K) * sizeof(W)) % 16 == 0 && aligned16(x) && aligned16(w);
  if (size_t(K) * sizeof(T) >= 4096) {
    wb::launch_chained(&gemv_residual_kernel<T, W, 8>, ceil_div(N, kWarps / 8), kThreads, 0, stream, x, w, scale, b,
                       res, y, N, K, vec);
  } else {
    wb::launch_chained(&gemv_residual_kernel<T, W, 4>, ceil_div(N, kWarps / 4), kThreads, 0, stream, x, w, scale, b,
                       res, y, N, K, vec);
  }
}

}  // namespace

template <class T>
void ln_gemv(const T* x, const T* r, const T* gamma, const T* beta, const T* w, const T* b, T* h, T* y, int N, int C,
             Epilogue epi, float eps, cudaStream_t stream) {
  require_valid(1, N, C, epi, b);
  require_row("C", C);
  launch_row_gemv<T, T, true, false>(row_args(x, r, gamma, beta, h, w, b, y, N, C, epi, eps), stream);
}

template <class T>
void ln_gemv_qkv(const T* x, const T* r, const T* gamma, const T* beta, const T* w, const T* b, T* h, T* qkv, int C,
                 float eps, const KvCacheTarget<T>& kv, cudaStream_t stream) {
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  require_row("C", C);
  require_kv("ln_gemv_qkv", C, kv);
  RowGemvArgs<T, T> a = row_args(x, r, gamma, beta, h, w, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  a.kv = kv;
  launch_row_gemv<T, T, true, false>(a, stream);
}

size_t gemv_argmax_workspace_bytes() { return sizeof(ArgmaxWorkspace); }

template <class T>
void gemv_argmax(const T* x, const T* w, T* y, int32_t* index, float* value, int N, int K, void* workspace,
                 cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::None, nullptr);
  require_row("K", K);
  if (workspace == nullptr) {
    throw std::invalid_argument("gemv_argmax: needs gemv_argmax_workspace_bytes() of workspace, zeroed once");
  }
  RowGemvArgs<T, T> a =
      row_args<T, T>(x, nullptr, nullptr, nullptr, nullptr, w, nullptr, y, N, K, Epilogue::None, 0.0f);
  a.index = index, a.value = value, a.ws = static_cast<ArgmaxWorkspace*>(workspace);
  launch_row_gemv<T, T, false, true>(a, stream);
}

template <class T>
void ln_gemv_argmax(const T* x, const T* gamma, const T* beta, const T* w, T* y, int32_t* index, float* value, int N,
                    int C, float eps, void* workspace, cudaStream_t stream) {
  require_valid(1, N, C, Epilogue::None, nullptr);
  require_row("C", C);
  if (workspace == nullptr) {
    throw std::invalid_argument("ln_gemv_argmax: needs gemv_argmax_workspace_bytes() of workspace, zeroed once");
  }
  RowGemvArgs<T, T> a = row_args<T, T>(x, nullptr, gamma, beta, nullptr, w, nullptr, y, N, C, Epilogue::None, eps);
  a.index = index, a.value = value, a.ws = static_cast<ArgmaxWorkspace*>(workspace);
  launch_row_gemv<T, T, true, true>(a, stream);
}

template <class T>
void gemv_residual(const T* x, const T* w, const T* b, const T* res, T* y, int N, int K, cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::Bias, b);
  if (res == nullptr) throw std::invalid_argument("res is null: gemv_residual adds the residual in its epilogue");
  launch_gemv_residual<T, T>(x, w, nullptr, b, res, y, N, K, stream);
}

// --- the INT8 forms (W8A16): the same kernels with W = int8_t ------------------------------

void ln_gemv_w8a16(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const int8_t* q,
                   const float* scale, const bf16* b, bf16* h, bf16* y, int N, int C, Epilogue epi, float eps,
                   cudaStream_t stream) {
  require_valid(1, N, C, epi, b);
  require_row("C", C);
  require_scale(scale);
  RowGemvArgs<bf16, int8_t> a = row_args(x, r, gamma, beta, h, q, b, y, N, C, epi, eps);
  a.scale = scale;
  launch_row_gemv<bf16, int8_t, true, false>(a, stream);
}

void ln_gemv_qkv_w8a16(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const int8_t* q,
                       const float* scale, const bf16* b, bf16* h, bf16* qkv, int C, float eps,
                       const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  require_row("C", C);
  require_scale(scale);
  require_kv("ln_gemv_qkv_w8a16", C, kv);
  RowGemvArgs<bf16, int8_t> a = row_args(x, r, gamma, beta, h, q, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  a.scale = scale;
  a.kv = kv;
  launch_row_gemv<bf16, int8_t, true, false>(a, stream);
}

void gemv_residual_w8a16(const bf16* x, const int8_t* q, const float* scale, const bf16* b, const bf16* res, bf16* y,
                         int N, int K, cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::Bias, b);
  require_scale(scale);
  if (res == nullptr) throw std::invalid_argument("res is null: gemv_residual_w8a16 adds the residual in its epilogue");
  launch_gemv_residual<bf16, int8_t>(x, q, scale, b, res, y, N, K, stream);
}

#define CH09_V6(T)                                                                                                 \
  template void ln_gemv<T>(const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, int, int, Epilogue, \
                           float, cudaStream_t);                                                                   \
  template void ln_gemv_qkv<T>(const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, int, float,     \
                               const KvCacheTarget<T>&, cudaStream_t);                                             \
  template void gemv_argmax<T>(const T*, const T*, T*, int32_t*, float*, int, int, void*, cudaStream_t);           \
  template void ln_gemv_argmax<T>(const T*, const T*, const T*, const T*, T*, int32_t*, float*, int, int, float,   \
                                  void*, cudaStream_t);                                                            \
  template void gemv_residual<T>(const T*, const T*, const T*, const T*, T*, int, int, cudaStream_t);
CH09_V6(float)
CH09_V6(bf16)
#undef CH09_V6

}  // namespace ch09::solution
