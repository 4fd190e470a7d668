// v2 — direct convolution with the input tile and the filters in shared memory.
//
// What changed from v1: a block of 16 x 16 threads owns a (16 x 16 pixels) x (8 filters)
// output tile of one image. Per step it copies, for 4 input channels, the input patch those
// 256 pixels read (16 + R - 1 rows and columns at stride 1: the tile plus its halo) and the
// 8 x 4 filters into shared memory; then each thread makes 8 outputs (one per filter) from
// them. Each input value is fetched from global memory once per block instead of once per
// (output, filter) that reads it: up to R x S x 8 times fewer global reads at stride 1.
// Padding is written into the tile as zeros while copying, so the inner loop has no tests.
// A patch larger than 48 KB of shared memory (filters far larger than any network's) goes to
// a plain one-thread-per-output kernel, v1's, repeated here; its output index split
// (thread_output) comes from conv_common.cuh.
//
// Run: ctest --preset ch10-solution -R conv2d/f32/v2_smem_direct
//      build/ch10/bin/ch10_bench --benchmark_filter=conv2d/f32
#include <cstdint>

#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "conv_common.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

constexpr int kTile = 16;     // (kTile x kTile) output pixels per block, one per thread
constexpr int kFilters = 8;   // filters per block: outputs per thread
constexpr int kChannels = 4;  // input channels staged per step
constexpr int kThreads = kTile * kTile;
constexpr size_t kMaxSmem = 48 * 1024;

// grid (tiles of P x Q, ceil(K / kFilters), N); dynamic shared memory:
//   patch   [kChannels][IH][IW]            IH = (kTile - 1) * stride + R, IW likewise
//   filters [kFilters][kChannels][R][S]
__global__ void __launch_bounds__(kThreads)
    smem_direct_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, ConvShape s,
                       int P, int Q, int tiles_q) {
  extern __shared__ float smem[];
  const int IH = (kTile - 1) * s.stride + s.R, IW = (kTile - 1) * s.stride + s.S;
  const int RS = s.R * s.S;
  float* patch = smem;                       // [kChannels][IH][IW]
  float* filt = smem + kChannels * IH * IW;  // [kFilters][kChannels][RS]

  const int p0 = blockIdx.x / tiles_q * kTile, q0 = blockIdx.x % tiles_q * kTile;
  const int k0 = blockIdx.y * kFilters;
  const int64_t n = blockIdx.z;
  const int ty = threadIdx.x / kTile, tx = threadIdx.x % kTile;
  const int h_base = p0 * s.stride - s.pad, v_base = q0 * s.stride - s.pad;  // the patch's corner in x

  float acc[kFilters] = {};
  for (int c0 = 0; c0 < s.C; c0 += kChannels) {
    // The patch of kChannels channels, zeros for padding and for channels past C.
    for (int e = threadIdx.x; e < kChannels * IH * IW; e += kThreads) {
      const int cc = e / (IH * IW), rest = e % (IH * IW), ih = rest / IW, iw = rest % IW;
      const int c = c0 + cc, h = h_base + ih, v = v_base + iw;
      float val = 0.0f;
      if (c < s.C && h >= 0 && h < s.H && v >= 0 && v < s.W) val = x[((n * s.C + c) * s.H + h) * s.W + v];
      patch[e] = val;
    }
    // The filters: kFilters x kChannels x R x S, zeros past K or C.
    for (int e = threadIdx.x; e < kFilters * kChannels * RS; e += kThreads) {
      const int kk = e / (kChannels * RS), rest = e % (kChannels * RS), cc = rest / RS, rs = rest % RS;
      const int k = k0 + kk, c = c0 + cc;
      filt[e] = (k < s.K && c < s.C) ? w[(int64_t(k) * s.C + c) * RS + rs] : 0.0f;
    }
    __syncthreads();
    for (int cc = 0; cc < kChannels; ++cc) {
      for (int r = 0; r < s.R; ++r) {
        const float* row = patch + (cc * IH + ty * s.stride + r) * IW + tx * s.stride;
        for (int t = 0; t < s.S; ++t) {
          const float xv = row[t];
#pragma unroll
          for (int kk = 0; kk < kFilters; ++kk)
            acc[kk] = fmaf(xv, filt[(kk * kChannels + cc) * RS + r * s.S + t], acc[kk]);
        }
      }
    }
    __syncthreads();  // the next step overwrites the patch
  }
  const int p = p0 + ty, q = q0 + tx;
  if (p >= P || q >= Q) return;
#pragma unroll
  for (int kk = 0; kk < kFilters; ++kk) {
    const int k = k0 + kk;
    if (k < s.K) y[((n * s.K + k) * P + p) * Q + q] = acc[kk];
  }
}

// v1's kernel, for the patches that do not fit.
__global__ void fallback_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                ConvShape s, int P, int Q, int64_t total) {
  NkpqOutput o;
  if (!thread_output(s.K, P, Q, total, o)) return;
  float acc = 0.0f;
  for (int c = 0; c < s.C; ++c) {
    for (int r = 0; r < s.R; ++r) {
      const int h = o.p * s.stride - s.pad + r;
      if (h < 0 || h >= s.H) continue;
      for (int t = 0; t < s.S; ++t) {
        const int v = o.q * s.stride - s.pad + t;
        if (v < 0 || v >= s.W) continue;
        acc = fmaf(x[((o.n * s.C + c) * s.H + h) * s.W + v], w[((int64_t(o.k) * s.C + c) * s.R + r) * s.S + t], acc);
      }
    }
  }
  y[o.i] = acc;
}

}  // namespace

void v2_smem_direct(const float* x, const float* w, float* y, ConvShape s, cudaStream_t stream) {
  require_valid(s);
  const size_t IH = size_t(kTile - 1) * s.stride + s.R, IW = size_t(kTile - 1) * s.stride + s.S;
  const size_t smem = sizeof(float) * (kChannels * IH * IW + size_t(kFilters) * kChannels * s.R * s.S);
  const int P = s.P(), Q = s.Q();
  if (smem > kMaxSmem) {
    const int64_t total = int64_t(s.N) * s.K * P * Q;
    fallback_kernel<<<unsigned(wb::ceil_div(total, int64_t{kThreads})), kThreads, 0, stream>>>(x, w, y, s, P, Q, total);
    WB_CHECK_LAUNCH();
    return;
  }
  const int tiles_q = wb::ceil_div(Q, kTile);
  const dim3 grid(unsigned(wb::ceil_div(P, kTile) * tiles_q), unsigned(wb::ceil_div(s.K, kFilters)), unsigned(s.N));
  smem_direct_kernel<<<grid, kThreads, smem, stream>>>(x, w, y, s, P, Q, tiles_q);
  WB_CHECK_LAUNCH();
}

}  // namespace ch10::solution
