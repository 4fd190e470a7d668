// Step 9 — the fused step's GEMVs fed by the copy engine (Hopper and later): v6's kernels,
// with each CTA's rows of W asked for in whole tiles before the kernel even waits for its input.
//
// v6 reaches the bandwidth only on long matrices. A GPT-2 1.5B block's GEMVs are 5 to 20 MB
// each, 40 to 160 KB per SM: a CTA of v6 streams one row per warp with four 16-byte loads per
// lane in flight, pays its LayerNorm prologue with almost nothing in flight, and its last
// loads drain while the next kernel has not started. Each kernel is mostly ramp-up and tail.
// Measured on an H100 in the 1.5B step, the QKV GEMV ran at a third of the copy bandwidth.
// What changes:
//
//   tiles by the copy engine   CTA c owns a contiguous slice of rows [n0, n1) of W: one
//                  contiguous span of memory. Thread 0 cuts it into tiles of R whole rows
//                  (R = 8, 4, 2 or 1: as many as fit in 16 KB) and asks for each with ONE bulk
//                  copy (cp.async.bulk, ../ch05_wmma/mbarrier.cuh) into a ring of shared
//                  memory, completing on the tile's mbarrier. No registers hold loads in flight,
//                  so the ring can be large: about 80 KB per CTA, most of a CTA's rows of a
//                  1.5B block matrix, requested in a handful of instructions.
//   before the wait            the weights are constants, so the first ring-full is requested
//                  BEFORE pdl_wait (programmatic launch, harness/cuda/pdl.cuh), and the kernel
//                  lets the next one launch right away (pdl_trigger before pdl_wait: the next
//                  kernel still waits for this one to END, which comes after this one's own
//                  wait, so the chain stays ordered). One CTA per SM of at most ~100 KB of
//                  shared memory leaves room for the next kernel's CTA beside it: while this
//                  kernel computes, the next one's weights are already on the way. In a chain
//                  of GEMVs, DRAM never waits for a kernel boundary.
//   the same arithmetic        the input row is staged (and normalised) in shared memory as in
//                  v6 (row_gemv.cuh), warps read the tile from shared memory: with R = 8 one
//                  warp per row, lane l taking pieces l, l + 32, ... (v4's order); with fewer
//                  rows per tile 8 / R warps share a row and add their sums through shared
//                  memory in a fixed order. The epilogue (bias, GELU, residual add, the KV
//                  store, the argmax's keys and merge) is v6's.
//
//   CTA c, rows [n0, n1):   tile t = rows n0 + t R .. n0 + t R + R - 1  ->  ring slot t % S
//       thread 0:  slots 0 .. S-1 requested      (before pdl_wait)
//       all:       stage the input row (LayerNorm)
//       per tile:  wait for its barrier's phase (t / S) % 2 -> dot products -> barrier ->
//                  thread 0 requests tile t + S into the freed slot -> epilogue
//
// Where it does not apply (compute capability below 9.0, a binary built without sm_90, rows
// that are not whole 16-byte pieces, W not 16-byte aligned, gemv_residual's x longer than the
// row v9 stages) each launcher calls v6's.
//
// Run: build/ch09/bin/ch09_bench --op=ln_gemv/bf16 --impl=v6_fused_decode,v9_stream_gemv
//      build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused
#include <algorithm>
#include <cstdint>

#include "../ch05_wmma/mbarrier.cuh"
#include "../ch05_wmma/mma_common.cuh"
#include "cuda/device.cuh"
#include "cuda/errors.cuh"
#include "cuda/pdl.cuh"
#include "ladder.cuh"
#include "row_gemv.cuh"

namespace ch09::solution::v9 {
namespace {

using namespace row_gemv;
using ch05::solution::bulk_load;
using ch05::solution::fence_async_shared;
using ch05::solution::fence_mbarrier_init;
using ch05::solution::mbar_arrive_expect_tx;
using ch05::solution::mbar_init;
using ch05::solution::mbar_wait;
using ch05::solution::smem_u32;

constexpr int kTileBytes = 16 * 1024;  // a tile's rows fit in this (one row may be longer: then one row)
constexpr int kRingBytes = 80 * 1024;  // the ring's size to aim for
constexpr int kMaxStages = 8;
// The most dynamic shared memory a launch asks for: a ring of 2 rows of 32 KB (K = 8192 in
// FP32), or kRingBytes of smaller tiles, and the input row.
constexpr int kMaxSmem = 2 * 32 * 1024 + 32 * 1024;

// How a CTA's rows are cut: R rows per tile, S tiles in the ring.
struct Plan {
  int rows_per_tile;  // R: 8, 4, 2 or 1 (8 / R warps per row)
  int stages;         // S: 2 .. kMaxStages
  int tile_bytes;     // R * K * sizeof(W)
  int ring_bytes;     // S * tile_bytes
};

template <class W>
Plan plan_for(int K) {
  const int row_bytes = K * static_cast<int>(sizeof(W));
  Plan p{};
  p.rows_per_tile = kWarps;
  while (p.rows_per_tile > 1 && p.rows_per_tile * row_bytes > kTileBytes) p.rows_per_tile /= 2;
  p.tile_bytes = p.rows_per_tile * row_bytes;
  p.stages = std::clamp(kRingBytes / p.tile_bytes, 2, kMaxStages);
  p.ring_bytes = p.stages * p.tile_bytes;
  return p;
}

// grid (at most one CTA per SM, at most N), block (kThreads), dynamic shared memory: the ring
// (p.ring_bytes), then the input row (K elements of T). CTA c owns rows
// [N c / grid, N (c + 1) / grid).
template <class T, class W, bool kNorm, bool kArgmax>
__global__ void __launch_bounds__(kThreads, 3) stream_gemv_kernel(const RowGemvArgs<T, W> a, const Plan p) {
  static_assert(kValidWeights<T, W>, "W is T, or int8 with BF16 activations");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem_raw[];
  unsigned char* ring = smem_raw;                            // (S, tile_bytes)
  T* s_row = reinterpret_cast<T*>(smem_raw + p.ring_bytes);  // (K) the input row
  __shared__ __align__(8) uint64_t full[kMaxStages];         // tile t's bytes have landed in slot t % S
  __shared__ float red[kWarps];                              // block_sum
  __shared__ float partial[2][kWarps];                       // each warp's sum, by the tile's parity
  __shared__ Key warp_best[kWarps];                          // kArgmax
  __shared__ bool last_cta;                                  // kArgmax
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int n0 = static_cast<int>(static_cast<long long>(a.N) * blockIdx.x / gridDim.x);
  const int n1 = static_cast<int>(static_cast<long long>(a.N) * (blockIdx.x + 1) / gridDim.x);
  const int R = p.rows_per_tile, tiles = (n1 - n0 + R - 1) / R;
  const uint32_t row_bytes = static_cast<uint32_t>(a.K) * sizeof(W);

  // Tile t (its rows, at most R, past n1 none) into slot t % S: one bulk copy.
  const auto request = [&](int t) {
    const int r0 = n0 + t * R, rows = min(R, n1 - r0);
    const uint32_t bar = smem_u32(&full[t % p.stages]);
    mbar_arrive_expect_tx(bar, rows * row_bytes);
    bulk_load(smem_u32(ring + (t % p.stages) * p.tile_bytes), a.w + size_t(r0) * a.K, rows * row_bytes, bar);
  };

  // 1. The first ring-full, before waiting for the previous kernel: W is constant.
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) mbar_init(smem_u32(&full[s]), 1);
    fence_mbarrier_init();
    for (int t = 0; t < min(p.stages, tiles); ++t) request(t);
  }
  wb::pdl_trigger();  // the next kernel may come in beside this one and request its own weights
  wb::pdl_wait();     // x, r and res are the previous kernels' outputs

  // 2. The input row, normalised, into shared memory (ends with a barrier, after which every
  //    thread also sees the initialised mbarriers).
  stage_row<T, W, kNorm>(a, s_row, red);

  // 3. The tiles: 8 / R warps per row, warp j of a row taking pieces j * 32 + lane, then every
  //    32 * 8 / R-th.
  constexpr int kPer = 16 / sizeof(W);  // weights per 16-byte piece of a row
  const int pieces = a.K / kPer;
  const int per_row = kWarps / R, r_local = warp / per_row, j = warp % per_row;
  const SharedPieces x4{reinterpret_cast<const uint4*>(s_row)};
  [[maybe_unused]] Key best = 0;  // kArgmax: the best key of the rows this thread finished
  for (int t = 0; t < tiles; ++t) {
    const int slot = t % p.stages, n = n0 + t * R + r_local;
    mbar_wait(smem_u32(&full[slot]), (t / p.stages) & 1);
    float acc = 0.0f;
    if (n < n1) {  // n is the same for the warp's 32 lanes
      const uint4* w4 = reinterpret_cast<const uint4*>(ring + slot * p.tile_bytes + r_local * row_bytes);
#pragma unroll 4
      for (int q = j * 32 + lane; q < pieces; q += 32 * per_row) acc += dot_piece<T, W>(w4[q], x4, q);
      acc = warp_sum(acc);
    }
    if (lane == 0) partial[t & 1][warp] = acc;
    __syncthreads();  // the slot is read by every warp, every partial sum is in
    if (threadIdx.x == 0 && t + p.stages < tiles) {
      fence_async_shared();  // the warps' reads of the slot come before the copy engine's writes
      request(t + p.stages);
    }
    if (j == 0 && lane == 0 && n < n1) {
      float sum = 0.0f;
      for (int i = 0; i < per_row; ++i) sum += partial[t & 1][warp + i];  // a fixed order
      const T out = finish_row(a, n, sum);
      if constexpr (kArgmax) best = key_max(best, make_key(to_f32(out), n));
    }
  }
  if constexpr (kArgmax) merge_argmax(a, best, warp_best, &last_cta);
#else
  __trap();  // not reached: launch_stream checks that the kernel was built for sm_90 or later
#endif
}

// True when this kernel can run here: a GPU of compute capability 9.0 or later, and a binary
// built for it (an sm_80 binary JIT-compiled on an H100 would hold the #else branch).
template <class K>
bool runs_here(K* kernel) {
  if (!wb::query_device().has_tma()) return false;
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  return attr.binaryVersion >= 90;
}

// Launches the streaming kernel and returns true, or returns false (the caller runs v6) where
// it does not apply.
template <class T, class W, bool kNorm, bool kArgmax>
bool launch_stream(RowGemvArgs<T, W> a, cudaStream_t stream) {
  auto* kernel = &stream_gemv_kernel<T, W, kNorm, kArgmax>;
  static const bool here = [&] {
    if (!runs_here(kernel)) return false;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem));
    return true;
  }();
  const size_t row_bytes = size_t(a.K) * sizeof(W);
  if (!here || a.K > kMaxRow || row_bytes % 16 != 0 || !aligned16(a.w)) return false;  // (v6 reads x from global)
  a.vec = true;
  const Plan p = plan_for<W>(a.K);
  const size_t smem = size_t(p.ring_bytes) + (size_t(a.K) * sizeof(T) + 15) / 16 * 16;
  const int sms = wb::query_device().sms;
  const unsigned grid = static_cast<unsigned>(std::clamp(std::min(a.N, sms), 1, kMaxCtas));
  wb::launch_chained(kernel, grid, kThreads, smem, stream, a, p);
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
