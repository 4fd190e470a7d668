// The decode attention of one head with its cached keys and values in shared memory, copied
// before the wait (step 16, decode/v16_decode_attention_ahead.cu, whose header comment says why
// it is built this way), for a CTA of any multiple of 32 threads: v16 runs it with 512 threads,
// a CTA per head; step 17 (decode/v17_layer_tail_flags.cu) with 256, as one role of its CTAs.
#pragma once
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "ladder.cuh"

namespace ch09::solution::attn_ahead {

constexpr int kD = 64;             // head size
constexpr int kMaxKeys = 640;      // cached keys held in shared memory (160 KB with the values)
constexpr int kRowBytes = kD * 2;  // 128: a row is 8 pieces of 16 bytes
constexpr int kUnroll = 8;         // keys from global memory per batch of loads

// Piece j of row r in a swizzled tile (uint4 index).
__device__ __forceinline__ int swz(int r, int j) { return r * 8 + (j ^ (r & 7)); }

__device__ __forceinline__ float dot8(const uint4& v, const float* q) {
  const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);
  float s = 0.0f;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 f = __bfloat1622float2(p[e]);
    s = fmaf(f.x, q[2 * e], s);
    s = fmaf(f.y, q[2 * e + 1], s);
  }
  return s;
}

template <int kWarps, bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* red) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if constexpr (kMax) {
    v = wb::warp_reduce(v, wb::Max{});
  } else {
    v = wb::warp_reduce(v, wb::Sum{});
  }
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float all = red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) all = kMax ? fmaxf(all, red[w]) : all + red[w];
  __syncthreads();  // red is free again
  return all;
}

// Head h of the step's attention, by one CTA of kThreads threads (v16: 512, grid (H); step 17:
// 256, one CTA of its grid per head). smem (dynamic, smem_bytes): sK, sV (n_pre rows each,
// swizzled), s_p (P floats), s_q, s_kn, s_vn (kD floats each), s_o (kWarps x kD floats); red
// (kWarps floats). qkv (3C): the token's query, key and value rows (C = H kD); caches
// [H][P][kD]; att (C). Waits for the previous kernel (pdl_wait) and lets the next one start.
template <int kThreads>
__device__ __forceinline__ void attend_head(const bf16* __restrict__ qkv, const bf16* __restrict__ k_cache,
                                            const bf16* __restrict__ v_cache, const int* __restrict__ pos_ptr,
                                            bf16* __restrict__ att, int H, int P, int n_pre, float scale_log2,
                                            unsigned char* smem, float* red, int h) {
  constexpr int kWarps = kThreads / 32;
  auto* sK = reinterpret_cast<uint4*>(smem);             // (n_pre, 8) pieces
  auto* sV = sK + n_pre * 8;                             // (n_pre, 8)
  auto* s_p = reinterpret_cast<float*>(sV + n_pre * 8);  // (P)
  float* s_q = s_p + P;                                  // (kD), scaled
  float* s_kn = s_q + kD;                                // (kD)
  float* s_vn = s_kn + kD;                               // (kD)
  float* s_o = s_vn + kD;                                // (kWarps, kD)
  const int t = threadIdx.x, C = H * kD;
  const bf16* kh = k_cache + static_cast<size_t>(h) * P * kD;
  const bf16* vh = v_cache + static_cast<size_t>(h) * P * kD;

  // 1. Before the wait: the head's first n_pre cached rows (earlier steps wrote them; the row
  //    at the new position may be in the middle of being written, and is never read from here),
  //    and an L2 request for the lines of the rows past them up to the position as it reads now
  //    (a hint: a stale value only asks for the wrong lines).
  for (int c = t; c < n_pre * 8; c += kThreads) {
    const int r = c / 8, j = c % 8;
    wb::ptx::cp_async_16(sK + swz(r, j), kh + r * kD + 8 * j, true);
    wb::ptx::cp_async_16(sV + swz(r, j), vh + r * kD + 8 * j, true);
  }
  wb::ptx::cp_async_commit();
  {
    const int hint = min(__ldcg(pos_ptr), P - 1);
    for (int r = n_pre + t; r < hint; r += kThreads) {
      wb::pdl_prefetch_l2(kh + r * kD);
      wb::pdl_prefetch_l2(vh + r * kD);
    }
  }

  // 2. The position, the query and the new key and value are the previous kernels' outputs.
  wb::pdl_wait();
  wb::pdl_trigger();
  const int pos = __ldcg(pos_ptr), L = pos + 1;  // keys 0 .. pos
  if (t < kD) {
    s_q[t] = __bfloat162float(qkv[h * kD + t]) * scale_log2;
    s_kn[t] = __bfloat162float(qkv[C + h * kD + t]);
    s_vn[t] = __bfloat162float(qkv[2 * C + h * kD + t]);
  }
  wb::ptx::cp_async_wait<0>();
  __syncthreads();

  // 3. Scores (base-2 units): thread t takes keys t, t + kThreads, ...
  const int in_smem = min(pos, n_pre);  // keys 0 .. in_smem - 1 from shared memory
  float mx = -INFINITY;
  for (int k = t; k < L; k += kThreads) {
    float s = 0.0f;
    if (k == pos) {
#pragma unroll 8
      for (int d = 0; d < kD; ++d) s = fmaf(s_kn[d], s_q[d], s);
    } else if (k < in_smem) {
#pragma unroll
      for (int j = 0; j < 8; ++j) s += dot8(sK[swz(k, j)], s_q + 8 * j);
    } else {
      uint4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __ldcg(reinterpret_cast<const uint4*>(kh + k * kD) + j);
#pragma unroll
      for (int j = 0; j < 8; ++j) s += dot8(v[j], s_q + 8 * j);
    }
    s_p[k] = s;
    mx = fmaxf(mx, s);
  }
  const float M = block_reduce<kWarps, true>(mx, red);
  float sum = 0.0f;
  for (int k = t; k < L; k += kThreads) {
    const float e = exp2f(s_p[k] - M);
    s_p[k] = e;
    sum += e;
  }
  const float S = block_reduce<kWarps, false>(sum, red);  // its barrier also publishes s_p

  // 4. o = P V: warp w takes keys w, w + kWarps, ...; lane l the elements 2l, 2l + 1.
  const int lane = t % 32, warp = t / 32;
  float o0 = 0.0f, o1 = 0.0f;
  int k = warp;
  for (; k < in_smem; k += kWarps) {
    const uint4* row = sV + k * 8;
    const uint32_t w = reinterpret_cast<const uint32_t*>(row + ((lane / 4) ^ (k & 7)))[lane % 4];
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
    const float pk = s_p[k];
    o0 = fmaf(pk, f.x, o0);
    o1 = fmaf(pk, f.y, o1);
  }
  for (; k < pos; k += kUnroll * kWarps) {  // past the shared rows: batches of loads, then the sums
    uint32_t w[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int kk = k + u * kWarps;
      w[u] = kk < pos ? __ldcg(reinterpret_cast<const unsigned int*>(vh + kk * kD) + lane) : 0u;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int kk = k + u * kWarps;
      if (kk < pos) {
        const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[u]));
        o0 = fmaf(s_p[kk], f.x, o0);
        o1 = fmaf(s_p[kk], f.y, o1);
      }
    }
  }
  if (warp == pos % kWarps) {  // the new key, last in warp (pos % kWarps)'s sum
    o0 = fmaf(s_p[pos], s_vn[2 * lane], o0);
    o1 = fmaf(s_p[pos], s_vn[2 * lane + 1], o1);
  }
  s_o[warp * kD + 2 * lane] = o0;
  s_o[warp * kD + 2 * lane + 1] = o1;
  __syncthreads();
  if (t < kD) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += s_o[w * kD + t];
    att[h * kD + t] = __float2bfloat16(o / S);
  }
}

// The dynamic shared memory of attend_head<kThreads>.
template <int kThreads>
constexpr size_t smem_bytes(int n_pre, int P) {
  return size_t(2) * n_pre * kRowBytes + sizeof(float) * (size_t(P) + 3 * kD + (kThreads / 32) * kD);
}

}  // namespace ch09::solution::attn_ahead
