// v5 — depthwise 3 x 3, 8 channels per thread, 16-byte loads and stores.
//
// The op is memory-bound (18 FLOPs per 4 bytes moved): the time is reading x and writing y
// once. One thread owns 8 neighbouring channels of one output pixel: each of its 9 taps is one
// 16-byte load of x (a uint4 of 8 BF16) and one of w, the 8 sums are FP32, and the 8 outputs
// leave in one 16-byte store. Consecutive threads take consecutive channel groups of a pixel,
// then the next pixel: a warp reads 512 contiguous bytes per tap. Each input pixel is read by
// the 9 output pixels around it; those reads hit L1 or L2, so DRAM sees x about once.
// C % 8 != 0: the same thread layout with scalar loads, the last group cut at C.
//
// Run: ctest --preset ch10-solution -R depthwise3x3/bf16/v5
//      build/ch10/bin/ch10_bench --benchmark_filter=depthwise
#include <cstdint>

#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void fma8(float (&acc)[8], const uint4& xv, const uint4& wv) {
  const auto* xp = reinterpret_cast<const __nv_bfloat162*>(&xv);
  const auto* wp = reinterpret_cast<const __nv_bfloat162*>(&wv);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = __bfloat1622float2(xp[i]), b = __bfloat1622float2(wp[i]);
    acc[2 * i] = fmaf(a.x, b.x, acc[2 * i]);
    acc[2 * i + 1] = fmaf(a.y, b.y, acc[2 * i + 1]);
  }
}

// One thread per (pixel, group of 8 channels); groups = ceil(C / 8).
template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    depthwise_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y, int H, int W, int C,
                     int groups, int64_t total) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int c0 = int(i % groups) * 8;
  const int64_t pix = i / groups;  // (n H + h) W + v
  const int v = int(pix % W), h = int(pix / W % H);
  const int64_t n = pix / (int64_t(W) * H);
  float acc[8] = {};
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    const int hh = h + r - 1;
    if (hh < 0 || hh >= H) continue;
#pragma unroll
    for (int t = 0; t < 3; ++t) {
      const int vv = v + t - 1;
      if (vv < 0 || vv >= W) continue;
      const bf16* xp = x + ((n * H + hh) * W + vv) * C + c0;
      const bf16* wp = w + (r * 3 + t) * C + c0;
      if constexpr (kVec) {
        fma8(acc, __ldg(reinterpret_cast<const uint4*>(xp)), __ldg(reinterpret_cast<const uint4*>(wp)));
      } else {
        for (int j = 0; j < 8 && c0 + j < C; ++j)
          acc[j] = fmaf(__bfloat162float(xp[j]), __bfloat162float(wp[j]), acc[j]);
      }
    }
  }
  bf16* yp = y + pix * C + c0;
  if constexpr (kVec) {
    uint4 out;
    auto* op = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
    for (int j = 0; j < 4; ++j) op[j] = __floats2bfloat162_rn(acc[2 * j], acc[2 * j + 1]);
    *reinterpret_cast<uint4*>(yp) = out;
  } else {
    for (int j = 0; j < 8 && c0 + j < C; ++j) yp[j] = __float2bfloat16(acc[j]);
  }
}

}  // namespace

void v5_depthwise(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  require_valid_depthwise(N, H, W, C);
  const int groups = wb::ceil_div(C, 8);
  const int64_t total = int64_t(N) * H * W * groups;
  const unsigned blocks = unsigned(wb::ceil_div(total, int64_t{kThreads}));
  if (C % 8 == 0) {
    depthwise_kernel<true><<<blocks, kThreads, 0, stream>>>(x, w, y, H, W, C, groups, total);
  } else {
    depthwise_kernel<false><<<blocks, kThreads, 0, stream>>>(x, w, y, H, W, C, groups, total);
  }
  WB_CHECK_LAUNCH();
}

}  // namespace ch10::solution
