// Step 4 — the batch-1 GEMV at memory speed: one warp per row of W.
//
// Decoding one token reads every weight once for one multiply-add, so the GEMV's time is
// N * K * sizeof(T) bytes over the DRAM bandwidth, and the kernel's job is to keep DRAM
// busy. Lane l reads 16-byte pieces l, l + 32, l + 64 ... of row n (a warp reads 512
// consecutive bytes per step: fully coalesced), multiplies them by the same pieces of x
// (x is small and read by every warp: it stays in L1/L2), and the warp sums its 32
// partial sums with shuffles (chapter 3). Eight warps per block, one row each; the grid
// has N / 8 blocks, enough warps in flight to cover the latency at GPT-2's sizes.
// Rows that are not 16-byte aligned (K * sizeof(T) % 16 != 0) take the scalar loop.
// Run: build/ch09/bin/ch09_bench --op=gemv_bias/bf16
#include <cstdint>

#include "runtime/errors.cuh"
#include "device/reduce.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution {
namespace {

constexpr int kWarps = 8;

// grid (ceil(N / kWarps)), block (32 * kWarps): warp w owns row n = blockIdx.x * kWarps + w.
template <class T>
__global__ void __launch_bounds__(32 * kWarps)
    gemv_warp_kernel(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, bool vec) {
  const int lane = threadIdx.x % 32, n = blockIdx.x * kWarps + threadIdx.x / 32;
  if (n >= N) return;  // a whole warp leaves together: n is the same for its 32 lanes
  const T* row = w + size_t(n) * K;
  float acc = 0.0f;
  if (vec) {
    constexpr int kPer = 16 / sizeof(T);  // elements per 16-byte piece
    const int pieces = K / kPer;
    const uint4* w4 = reinterpret_cast<const uint4*>(row);
    const uint4* x4 = reinterpret_cast<const uint4*>(x);
#pragma unroll 4
    for (int p = lane; p < pieces; p += 32) acc += dot16(__ldg(w4 + p), __ldg(x4 + p), T{});
  } else {
    for (int k = lane; k < K; k += 32) acc += to_float(row[k]) * to_float(x[k]);
  }
  acc = wb::warp_sum(acc);  // the xor butterfly (harness/device/reduce.cuh)
  if (lane == 0) y[n] = epilogue(acc, b, n, epi);
}

}  // namespace

template <class T>
void gemv_warp(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  const bool vec = (size_t(K) * sizeof(T)) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(w) % 16 == 0;
  gemv_warp_kernel<T><<<ceil_div(N, kWarps), 32 * kWarps, 0, stream>>>(x, w, b, y, N, K, epi, vec);
  WB_CHECK_LAUNCH();
}

template void gemv_warp<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int, Epilogue, cudaStream_t);
template void gemv_warp<float>(const float*, const float*, const float*, float*, int, int, Epilogue, cudaStream_t);

}  // namespace ch09::solution
