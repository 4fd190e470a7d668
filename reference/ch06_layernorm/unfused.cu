// Chapter 6 unfused baseline: the residual add and the norm as two kernels, as a framework
// runs them when nothing fuses them.
//
//   kernel 1 (residual_add)   read x, read r, write h                 3 x N x C elements
//   kernel 2 (norm)           read h, write y (+ 8 bytes per row)      2 x N x C elements
//
// 5 passes over N x C BF16 elements through DRAM, against 4 for a fused kernel (which
// normalises h while it still holds it): at best 4/5 of the time of this pipeline. Each
// kernel is written to run near the bandwidth on its own, so that the comparison measures
// the fusion, not a weak kernel: the add moves 16 bytes per access where the rows allow,
// and the norm stages its row of h in shared memory, so that h is read from DRAM once.
#include <algorithm>
#include <cstdint>

#include "runtime/errors.cuh"
#include "device/math.cuh"
#include "device/reduce.cuh"
#include "reference.cuh"

namespace ch06::reference {
namespace {

constexpr int kAddThreads = 256;
constexpr int kNormThreads = 256;

using wb::block_sum;  // the block's sum to every thread, one barrier (harness/device/reduce.cuh)
using wb::ceil_div;

// One thread per 8 elements of a row (16 bytes), rows ld apart; `vec` when every row starts
// 16-byte aligned. The tail of a row (C % 8) and misaligned rows go element by element.
__global__ void __launch_bounds__(kAddThreads)
    add_kernel(const bf16* x, const bf16* r, bf16* h, int N, int C, int ld, int packs_per_row, bool vec) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kAddThreads + threadIdx.x;
  if (i >= static_cast<int64_t>(N) * packs_per_row) return;
  const int n = static_cast<int>(i / packs_per_row);
  const int c0 = static_cast<int>(i % packs_per_row) * 8;
  const size_t at = static_cast<size_t>(n) * ld + c0;
  if (vec && c0 + 8 <= C) {
    const uint4 a = *reinterpret_cast<const uint4*>(x + at);
    const uint4 b = *reinterpret_cast<const uint4*>(r + at);
    const uint32_t aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
    uint32_t hw[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const __nv_bfloat162 s =
          __floats2bfloat162_rn(__uint_as_float(aw[k] << 16) + __uint_as_float(bw[k] << 16),
                                __uint_as_float(aw[k] & 0xFFFF0000u) + __uint_as_float(bw[k] & 0xFFFF0000u));
      hw[k] = *reinterpret_cast<const uint32_t*>(&s);
    }
    *reinterpret_cast<uint4*>(h + at) = make_uint4(hw[0], hw[1], hw[2], hw[3]);
  } else {
    for (int c = c0; c < min(c0 + 8, C); ++c) {
      const size_t e = static_cast<size_t>(n) * ld + c;
      h[e] = __float2bfloat16_rn(__bfloat162float(x[e]) + __bfloat162float(r[e]));
    }
  }
}

// One block per row of h: the row is copied into shared memory once (C BF16), both
// statistics and y come from there.
template <bool kLayer>
__global__ void __launch_bounds__(kNormThreads)
    norm_kernel(const bf16* h, const bf16* gamma, const bf16* beta, bf16* y, float* mean_out, float* rstd_out, int C,
                int ld, float eps) {
  extern __shared__ bf16 row[];  // (C) this block's row of h
  __shared__ float ex[2][kNormThreads / 32];
  const int n = blockIdx.x;
  const bf16* src = h + static_cast<size_t>(n) * ld;
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += kNormThreads) {
    const bf16 v = src[c];
    row[c] = v;
    const float f = __bfloat162float(v);
    s += kLayer ? f : f * f;
  }
  s = block_sum<kNormThreads>(s, ex[0]);
  float mean = 0.0f, rstd;
  if constexpr (kLayer) {
    mean = s / C;
    float q = 0.0f;
    for (int c = threadIdx.x; c < C; c += kNormThreads) {
      const float d = __bfloat162float(row[c]) - mean;  // each thread reads what it stored
      q += d * d;
    }
    rstd = rsqrtf(block_sum<kNormThreads>(q, ex[1]) / C + eps);
  } else {
    rstd = rsqrtf(s / C + eps);
  }
  bf16* dst = y + static_cast<size_t>(n) * ld;
  for (int c = threadIdx.x; c < C; c += kNormThreads) {
    float v = (__bfloat162float(row[c]) - mean) * rstd * __bfloat162float(gamma[c]);
    if constexpr (kLayer) v += __bfloat162float(beta[c]);
    dst[c] = __float2bfloat16_rn(v);
  }
  if (threadIdx.x == 0) {
    if constexpr (kLayer) mean_out[n] = mean;
    rstd_out[n] = rstd;
  }
}

template <bool kLayer>
void launch_norm(const bf16* h, const bf16* gamma, const bf16* beta, bf16* y, float* mean, float* rstd, int N, int C,
                 int ld, float eps, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(C) * sizeof(bf16);
  if (smem > 48 * 1024) {  // beyond the default: opt in (up to 227 KB on sm_90, 163 KB on sm_80)
    CUDA_CHECK(
        cudaFuncSetAttribute(norm_kernel<kLayer>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  norm_kernel<kLayer><<<N, kNormThreads, smem, stream>>>(h, gamma, beta, y, mean, rstd, C, ld, eps);
  WB_CHECK_LAUNCH();
}

}  // namespace

void residual_add(const bf16* x, const bf16* r, bf16* h, int N, int C, int ld, cudaStream_t stream) {
  if (N == 0) return;
  const bool vec = (static_cast<size_t>(ld) * sizeof(bf16)) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(r) % 16 == 0 && reinterpret_cast<uintptr_t>(h) % 16 == 0;
  const int packs = ceil_div(C, 8);
  add_kernel<<<ceil_div(static_cast<int64_t>(N) * packs, kAddThreads), kAddThreads, 0, stream>>>(x, r, h, N, C, ld,
                                                                                                 packs, vec);
  WB_CHECK_LAUNCH();
}

void unfused_residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                                float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  residual_add(x, r, h, N, C, ld, stream);
  launch_norm<true>(h, gamma, beta, y, mean, rstd, N, C, ld, eps, stream);
}

void unfused_residual_rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N,
                              int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  residual_add(x, r, h, N, C, ld, stream);
  launch_norm<false>(h, gamma, nullptr, y, nullptr, rstd, N, C, ld, eps, stream);
}

}  // namespace ch06::reference

// --- the references as the harness sees them: cuDNN first (the yardstick of "x ref"), then
// the unfused baseline that shows what fusion buys.
#include "declare/op.cuh"

namespace ch06::reference {

WB_VARIANTS(ch06_reference, wb::Role::Reference) {
  return {
      wb::variant("residual_layernorm/bf16", "cudnn_norm", &cudnn_residual_layernorm).is_library(),
      wb::variant("residual_rmsnorm/bf16", "cudnn_norm", &cudnn_residual_rmsnorm).is_library(),
      wb::variant("layernorm/f32", "cudnn_norm", &cudnn_layernorm_f32).is_library(),
      wb::variant("residual_layernorm/bf16", "unfused_add_then_norm", &unfused_residual_layernorm),
      wb::variant("residual_rmsnorm/bf16", "unfused_add_then_norm", &unfused_residual_rmsnorm),
  };
}

}  // namespace ch06::reference
