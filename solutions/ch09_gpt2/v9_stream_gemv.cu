// Step 9 — the fused step's GEMVs with deep queues: v6's kernels, each thread keeping 23
// 16-byte pieces of W in flight through cp.async, the first ones requested before the kernel
// even waits for its input.
//
// v6 reaches the bandwidth only on long matrices. A GPT-2 1.5B block's GEMVs are 5 to 20 MB
// each, 40 to 160 KB per SM: a warp of v6 holds four 16-byte loads per lane in flight (its
// registers: 64 per thread at 4 CTAs per SM), pays the LayerNorm prologue with almost nothing
// in flight, and its last loads drain while the next kernel has not started. Each kernel is
// mostly ramp-up and tail. What changes:
//
//   a queue in shared memory   a thread's loads go through cp.async into its own ring of
//                  kDepth 16-byte slots in shared memory (96 KB per CTA), not into registers:
//                  kDepth - 1 pieces in flight per thread, 23 where v6 had 4, with one CTA of
//                  8 warps per SM (about 94 KB in flight per SM).
//   contiguous rows per CTA    CTA c owns rows [N c / grid, N (c + 1) / grid); warp w of it
//                  rows n0 + w, n0 + w + 8, ... A thread's pieces, in the order it adds them,
//                  are those of v4's lane: row by row, pieces lane, lane + 32, ... So its sums
//                  are v4's (v5's on int8 weights) bit for bit, and v6's.
//   before the wait            the weights are constants, so the first kDepth - 1 pieces of
//                  every thread are requested BEFORE pdl_wait (programmatic launch,
//                  harness/cuda/pdl.cuh), and the kernel lets the next one launch at once
//                  (pdl_trigger before pdl_wait: the next kernel still waits for this one to
//                  END, which comes after this one's own wait, so the chain stays ordered).
//                  A CTA of about 100 KB of shared memory leaves room for the next kernel's
//                  CTA beside it on the SM: while this kernel computes, the next one's weights
//                  are already on their way, and in a chain of GEMVs DRAM need not wait for a
//                  kernel boundary.
//
//   thread t of warp w, pieces c = 0, 1, ... (row i = c / chunks, piece lane + 32 (c % chunks)):
//       before pdl_wait:  pieces 0 .. kDepth - 2 requested          ring slot c % kDepth
//       then:             the input row staged (LayerNorm) in shared memory
//       per piece c:      wait until piece c has landed -> x piece -> FMA -> request piece
//                         c + kDepth - 1 into the slot piece c - 1 freed; at a row's last
//                         piece: the warp's shuffle sum and v6's epilogue
//
// Tried first: one bulk copy (cp.async.bulk, completing on an mbarrier) per tile of whole rows,
// issued by one thread into an 80 KB ring. Measured on an H100 it was slower than v6 on every
// shape (the LM head at 1.5 TB/s against v6's 2.1): a few large copies per SM did not keep
// DRAM as busy as 256 threads' small ones. The copy engine pays on 2-D tiles (chapter 5's
// bonus), not here.
//
// Where it does not apply (compute capability below 8.0, rows that are not whole 16-byte
// pieces, W not 16-byte aligned, gemv_residual's x longer than the row v9 stages) each
// launcher calls v6's.
//
// Run: build/ch09/bin/ch09_bench --full --op=ln_gemv --impl=v6_fused_decode,v9_stream_gemv
//      build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused
#include <algorithm>
#include <cstdint>

#include "../ch05_wmma/async_copy.cuh"
#include "cuda/device.cuh"
#include "cuda/errors.cuh"
#include "cuda/pdl.cuh"
#include "ladder.cuh"
#include "row_gemv.cuh"

namespace ch09::solution::v9 {
namespace {

using namespace row_gemv;
using ch05::solution::cp_async_16;
using ch05::solution::cp_async_commit;
using ch05::solution::cp_async_wait;

constexpr int kDepth = 24;                                // ring slots per thread (kDepth - 1 in flight)
constexpr int kRingBytes = kDepth * kThreads * 16;        // 96 KB per CTA
constexpr int kMaxSmem = kRingBytes + kMaxRow * 4;        // and the input row: at most 8192 FP32

// grid (at most one CTA per SM, at most N), block (kThreads), dynamic shared memory: the ring
// (kRingBytes, slot s of thread t at [s][t]: a warp's slot is 512 contiguous bytes), then the
// input row (K elements of T).
template <class T, class W, bool kNorm, bool kArgmax>
__global__ void __launch_bounds__(kThreads, 2) stream_gemv_kernel(const RowGemvArgs<T, W> a) {
  static_assert(kValidWeights<T, W>, "W is T, or int8 with BF16 activations");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint4* ring = reinterpret_cast<uint4*>(smem_raw) + threadIdx.x;  // this thread's slot 0; slot s at ring[s * kThreads]
  T* s_row = reinterpret_cast<T*>(smem_raw + kRingBytes);         // (K) the input row
  __shared__ float red[kWarps];                                   // block_sum
  __shared__ Key warp_best[kWarps];                               // kArgmax
  __shared__ bool last_cta;                                       // kArgmax
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n0 = static_cast<int>(static_cast<long long>(a.N) * blockIdx.x / gridDim.x);
  const int n1 = static_cast<int>(static_cast<long long>(a.N) * (blockIdx.x + 1) / gridDim.x);
  constexpr int kPer = 16 / sizeof(W);                  // weights per 16-byte piece of a row
  const int pieces = a.K / kPer, chunks = (pieces + 31) / 32;  // a row: `chunks` pieces per lane
  const int rows = n1 - n0 > warp ? (n1 - n0 - warp + kWarps - 1) / kWarps : 0;  // rows n0 + warp + 8 i
  const int total = rows * chunks;                      // this thread's pieces

  // The requests, in the thread's order: piece (qi, qj) = row n0 + warp + 8 qi, piece lane + 32 qj.
  int q = 0, qi = 0, qj = 0, q_slot = 0;
  const auto request = [&] {
    if (q < total) {
      const int p = lane + 32 * qj;
      const uint4* row = reinterpret_cast<const uint4*>(a.w + size_t(n0 + warp + kWarps * qi) * a.K);
      cp_async_16(ring + q_slot * kThreads, row + (p < pieces ? p : 0), p < pieces);  // past the row: zeros
      if (++qj == chunks) qj = 0, ++qi;
    }
    cp_async_commit();  // one group per request, empty past the end: the waits below count them
    ++q;
    if (++q_slot == kDepth) q_slot = 0;
  };

  // 1. The first kDepth - 1 pieces, before waiting for the previous kernel: W is constant.
  for (int c = 0; c < kDepth - 1; ++c) request();
  wb::pdl_trigger();  // the next kernel may come in beside this one and request its own weights
  wb::pdl_wait();     // x, r and res are the previous kernels' outputs

  // 2. The input row, normalised, into shared memory.
  stage_row<T, W, kNorm>(a, s_row, red);

  // 3. The pieces: kDepth - 1 + c groups committed when piece c is waited for, so at most
  //    kDepth - 2 pending means piece c has landed. Its slot's next request comes after its
  //    value is used; the request issued here refills the slot piece c - 1 left.
  const SharedPieces x4{reinterpret_cast<const uint4*>(s_row)};
  [[maybe_unused]] Key best = 0;  // kArgmax: lane 0's best key of the warp's rows
  float acc = 0.0f;
  int i = 0, j = 0, slot = 0;  // piece c: row i, lane piece j, ring slot
  for (int c = 0; c < total; ++c) {
    cp_async_wait<kDepth - 2>();
    const uint4 wv = ring[slot * kThreads];
    const int p = lane + 32 * j;
    if (p < pieces) acc += dot_piece<T, W>(wv, x4, p);
    request();
    if (++slot == kDepth) slot = 0;
    if (++j == chunks) {  // the row's last piece: v4's shuffle sum, v6's epilogue
      acc = warp_sum(acc);
      const int n = n0 + warp + kWarps * i;
      if (lane == 0) {
        const T out = finish_row(a, n, acc);
        if constexpr (kArgmax) best = key_max(best, make_key(to_f32(out), n));
      }
      acc = 0.0f, j = 0, ++i;
    }
  }
  cp_async_wait<0>();
  if constexpr (kArgmax) merge_argmax(a, best, warp_best, &last_cta);
}

// Launches the kernel and returns true, or returns false (the caller runs v6) where it does not
// apply: a GPU before 8.0 (cp.async), a binary without code for 8.0 or later, rows that are not
// whole 16-byte pieces, W not 16-byte aligned, K past the staged row.
template <class T, class W, bool kNorm, bool kArgmax>
bool launch_stream(RowGemvArgs<T, W> a, cudaStream_t stream) {
  auto* kernel = &stream_gemv_kernel<T, W, kNorm, kArgmax>;
  static const bool here = [&] {
    if (!wb::query_device().has_cp_async()) return false;
    cudaFuncAttributes attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
    if (attr.ptxVersion < 80) return false;  // (built for an older target, cp.async compiles to nothing)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem));
    return true;
  }();
  const size_t row_bytes = size_t(a.K) * sizeof(W);
  if (!here || a.K > kMaxRow || row_bytes % 16 != 0 || !aligned16(a.w)) return false;
  a.vec = true;
  const size_t smem = size_t(kRingBytes) + (size_t(a.K) * sizeof(T) + 15) / 16 * 16;
  const int sms = wb::query_device().sms;
  const unsigned grid = static_cast<unsigned>(std::clamp(std::min(a.N, sms), 1, kMaxCtas));
  wb::launch_chained(kernel, grid, kThreads, smem, stream, a);
  return true;
}

}  // namespace

template <class T>
void ln_gemv(const T* x, const T* r, const T* gamma, const T* beta, const T* w, const T* b, T* h, T* y, int N, int C,
             Epilogue epi, float eps, cudaStream_t stream) {
  require_valid(1, N, C, epi, b);
  require_row("C", C);
  if (!launch_stream<T, T, true, false>(row_args(x, r, gamma, beta, h, w, b, y, N, C, epi, eps), stream)) {
    solution::ln_gemv<T>(x, r, gamma, beta, w, b, h, y, N, C, epi, eps, stream);
  }
}

template <class T>
void ln_gemv_qkv(const T* x, const T* r, const T* gamma, const T* beta, const T* w, const T* b, T* h, T* qkv, int C,
                 float eps, const KvCacheTarget<T>& kv, cudaStream_t stream) {
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  require_row("C", C);
  require_kv("ln_gemv_qkv", C, kv);
  RowGemvArgs<T, T> a = row_args(x, r, gamma, beta, h, w, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  a.kv = kv;
  if (!launch_stream<T, T, true, false>(a, stream)) {
    solution::ln_gemv_qkv<T>(x, r, gamma, beta, w, b, h, qkv, C, eps, kv, stream);
  }
}

template <class T>
void gemv_argmax(const T* x, const T* w, T* y, int32_t* index, float* value, int N, int K, void* workspace,
                 cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::None, nullptr);
  require_row("K", K);
  require_workspace("gemv_argmax", workspace);
  RowGemvArgs<T, T> a = row_args<T, T>(x, nullptr, nullptr, nullptr, nullptr, w, nullptr, y, N, K, Epilogue::None,
                                        0.0f);
  a.index = index, a.value = value, a.ws = static_cast<ArgmaxWorkspace*>(workspace);
  if (!launch_stream<T, T, false, true>(a, stream)) {
    solution::gemv_argmax<T>(x, w, y, index, value, N, K, workspace, stream);
  }
}

template <class T>
void ln_gemv_argmax(const T* x, const T* gamma, const T* beta, const T* w, T* y, int32_t* index, float* value, int N,
                    int C, float eps, void* workspace, cudaStream_t stream) {
  require_valid(1, N, C, Epilogue::None, nullptr);
  require_row("C", C);
  require_workspace("ln_gemv_argmax", workspace);
  RowGemvArgs<T, T> a = row_args<T, T>(x, nullptr, gamma, beta, nullptr, w, nullptr, y, N, C, Epilogue::None, eps);
  a.index = index, a.value = value, a.ws = static_cast<ArgmaxWorkspace*>(workspace);
  if (!launch_stream<T, T, true, true>(a, stream)) {
    solution::ln_gemv_argmax<T>(x, gamma, beta, w, y, index, value, N, C, eps, workspace, stream);
  }
}

// y = res + W · x + b: the row kernel without the LayerNorm, the residual in its epilogue.
template <class T>
void gemv_residual(const T* x, const T* w, const T* b, const T* res, T* y, int N, int K, cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::Bias, b);
  require_res("gemv_residual", res);
  RowGemvArgs<T, T> a = row_args<T, T>(x, nullptr, nullptr, nullptr, nullptr, w, b, y, N, K, Epilogue::Bias, 0.0f);
  a.res = res;
  if (!launch_stream<T, T, false, false>(a, stream)) solution::gemv_residual<T>(x, w, b, res, y, N, K, stream);
}

void ln_gemv_w8a16(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const int8_t* q,
                   const float* scale, const bf16* b, bf16* h, bf16* y, int N, int C, Epilogue epi, float eps,
                   cudaStream_t stream) {
  require_valid(1, N, C, epi, b);
  require_row("C", C);
  require_scale(scale);
  RowGemvArgs<bf16, int8_t> a = row_args(x, r, gamma, beta, h, q, b, y, N, C, epi, eps);
  a.scale = scale;
  if (!launch_stream<bf16, int8_t, true, false>(a, stream)) {
    solution::ln_gemv_w8a16(x, r, gamma, beta, q, scale, b, h, y, N, C, epi, eps, stream);
  }
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
  if (!launch_stream<bf16, int8_t, true, false>(a, stream)) {
    solution::ln_gemv_qkv_w8a16(x, r, gamma, beta, q, scale, b, h, qkv, C, eps, kv, stream);
  }
}

void gemv_residual_w8a16(const bf16* x, const int8_t* q, const float* scale, const bf16* b, const bf16* res, bf16* y,
                         int N, int K, cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::Bias, b);
  require_scale(scale);
  require_res("gemv_residual_w8a16", res);
  RowGemvArgs<bf16, int8_t> a = row_args<bf16, int8_t>(x, nullptr, nullptr, nullptr, nullptr, q, b, y, N, K,
                                                       Epilogue::Bias, 0.0f);
  a.scale = scale;
  a.res = res;
  if (!launch_stream<bf16, int8_t, false, false>(a, stream)) {
    solution::gemv_residual_w8a16(x, q, scale, b, res, y, N, K, stream);
  }
}

#define CH09_V9(T)                                                                                                  \
  template void ln_gemv<T>(const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, int, int, Epilogue,  \
                           float, cudaStream_t);                                                                    \
  template void ln_gemv_qkv<T>(const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, int, float,      \
                               const KvCacheTarget<T>&, cudaStream_t);                                              \
  template void gemv_argmax<T>(const T*, const T*, T*, int32_t*, float*, int, int, void*, cudaStream_t);            \
  template void ln_gemv_argmax<T>(const T*, const T*, const T*, const T*, T*, int32_t*, float*, int, int, float,    \
                                  void*, cudaStream_t);                                                             \
  template void gemv_residual<T>(const T*, const T*, const T*, const T*, T*, int, int, cudaStream_t);
CH09_V9(float)
CH09_V9(bf16)
#undef CH09_V9

}  // namespace ch09::solution::v9
