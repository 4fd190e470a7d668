// What the chapter's solution kernels share: the folded BatchNorm epilogue.
//
// BatchNorm at inference is y = (v - mean) / sqrt(var + eps) * gamma + beta per channel, an
// affine map of v, so it folds into one multiply-add:
//   scale = gamma / sqrt(var + eps)      shift = beta - mean * scale
//   y     = relu((acc + bias) * scale + shift + residual)
// A block folds the parameters of its channels once (fold_bn), then every element of the
// tile costs two FMAs, an add and a max (apply_epilogue); epilogue_store8 does it for 8
// neighbouring channels of one pixel and stores them (v6 and v8's staged epilogues); the
// register epilogues of v12, v13 and v14 read their residual in pairs (residual_pair) and store
// their staged BF16 rows 16 bytes at a time (store8_out).
//
// Also here: 8 BF16 widened to FP32 (widen8; v7 and epilogue_store8), v4's im2col tile copies
// (Im2colCopies; v4 and the chapter's lesson kernels in chapters/ch10_conv/fusion_lessons.cu),
// the block tile picked per shape (pick_tile; v6 and v8), a pixel row of the im2col matrix
// (im2col_row; v6, v8 and v11), v3 and v4's launcher
// (launch_implicit_gemm), and the output of a one-thread-per-output NCHW kernel (thread_output;
// v2's fallback and the self-tests' direct kernel in chapters/ch10_conv/broken.cu).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "device/async_copy.cuh"
#include "runtime/launch_helpers.cuh"
#include "device/math.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"
#include "ch10.cuh"

namespace ch10::solution {

struct Folded {
  float bias, scale, shift;
};

// The folded parameters of channel k (k < K).
__device__ __forceinline__ Folded fold_bn(const BnParams& bn, int k) {
  const float scale = bn.gamma[k] * rsqrtf(bn.var[k] + bn.eps);
  return {bn.bias[k], scale, bn.beta[k] - bn.mean[k] * scale};
}

// The epilogue of one element: acc is the complete FP32 sum over C x R x S.
__device__ __forceinline__ float apply_epilogue(float acc, const Folded& f, float residual) {
  const float v = fmaf(acc + f.bias, f.scale, f.shift) + residual;
  return fmaxf(v, 0.0f);
}

// A warp's mma.sync accumulators (MI x NI tiles of 16 x 8, 4 floats a lane each) set to zero.
template <int MI, int NI>
__device__ __forceinline__ void zero_accumulators(float (&acc)[MI][NI][4]) {
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NI; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    }
  }
}

// The residual of filters k and k + 1 of pixel m, for an epilogue on pairs of accumulators (the
// register epilogues of v12, v13 and v14): zeros without a residual, for a pixel past M (m_ok
// false) and for a filter past K. vec_out: K even, so k (even) and k + 1 are both in or both out,
// one 4-byte load.
__device__ __forceinline__ float2 residual_pair(const __nv_bfloat16* __restrict__ residual, int m, bool m_ok, int k,
                                                int K, bool vec_out) {
  float r0 = 0.0f, r1 = 0.0f;
  if (residual != nullptr && m_ok) {
    const __nv_bfloat16* at = residual + int64_t(m) * K + k;
    if (vec_out) {
      if (k < K) {
        const float2 rv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(at));
        r0 = rv.x, r1 = rv.y;
      }
    } else {
      if (k < K) r0 = __bfloat162float(at[0]);
      if (k + 1 < K) r1 = __bfloat162float(at[1]);
    }
  }
  return make_float2(r0, r1);
}

// 8 staged outputs (channels kc .. kc + 7 of one pixel, BF16, at src in shared memory) to y at
// dst: one 16-byte store where vec_out (K % 8 == 0, y aligned), else those below K one by one
// (the staged epilogues of v12, v13 and v14).
__device__ __forceinline__ void store8_out(const __nv_bfloat16* src, __nv_bfloat16* __restrict__ dst, int kc, int K,
                                           bool vec_out) {
  if (vec_out) {
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if (kc + e >= K) break;
      dst[e] = src[e];
    }
  }
}

// 8 BF16 values (one 16-byte vector) widened to FP32, in order (v7's taps and pixels, and
// the residual of epilogue_store8): the device library's.
using wb::widen8;

// The epilogue of 8 neighbouring channels kc .. kc + 7 of one output pixel, stored at y + at
// (at = m K + kc): v holds their complete FP32 sums, f their folded parameters. vec (K % 8 ==
// 0, y and the residual 16-byte aligned): one 16-byte load of the residual, one 16-byte store
// of y; otherwise element by element, the channels from K on skipped.
__device__ __forceinline__ void epilogue_store8(const float (&v)[8], const Folded* f, const bf16* residual, bf16* y,
                                                int64_t at, int kc, int K, bool vec) {
  if (vec) {
    float res[8] = {};
    if (residual) {
      const uint4 u = *reinterpret_cast<const uint4*>(residual + at);
      widen8(res, u);
    }
    uint4 u;
    auto* o = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      o[e] = __floats2bfloat162_rn(apply_epilogue(v[2 * e], f[2 * e], res[2 * e]),
                                   apply_epilogue(v[2 * e + 1], f[2 * e + 1], res[2 * e + 1]));
    }
    *reinterpret_cast<uint4*>(y + at) = u;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if (kc + e >= K) break;
      const float res = residual ? __bfloat162float(residual[at + e]) : 0.0f;
      y[at + e] = __float2bfloat16(apply_epilogue(v[e], f[e], res));
    }
  }
}

constexpr int kOutside = -(1 << 30);  // h0 of a pixel row past M: every tap falls outside

// Row m of the implicit GEMM's A (output pixel m = (n, p, q), q fastest, of M = N P Q) for a
// thread that copies channels ch .. ch + 7 of it (v6, v8, v11): the input row h0 and column w0
// of its tap (0, 0), and the x offset of that tap's channel ch (outside x in the padding: only
// taps inside the image are read). m >= M: h0 = kOutside, which fails the bounds test of every
// tap. Computed once, before the K loop; the loop then only adds the tap's offset.
__device__ __forceinline__ void im2col_row(const ConvShape& s, int P, int Q, int M, int m, int ch, int& h0, int& w0,
                                           int64_t& base) {
  h0 = kOutside;
  w0 = 0;
  base = 0;
  if (m < M) {
    const int q = m % Q, pq = m / Q, p = pq % P, n = pq / P;
    h0 = p * s.stride - s.pad;
    w0 = q * s.stride - s.pad;
    base = ((int64_t(n) * s.H + h0) * s.W + w0) * s.C + ch;
  }
}

// The output this thread computes in a one-thread-per-output NCHW kernel of `total` outputs:
// its index i into y, split into (n, k, p, q) with q fastest, as v1 splits it. False past the
// last output (the thread has nothing to do).
struct NkpqOutput {
  int64_t i, n;
  int k, p, q;
};
__device__ __forceinline__ bool thread_output(int K, int P, int Q, int64_t total, NkpqOutput& o) {
  o.i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o.i >= total) return false;
  o.q = int(o.i % Q), o.p = int(o.i / Q % P), o.k = int(o.i / (int64_t(Q) * P) % K);
  o.n = o.i / (int64_t(Q) * P * K);
  return true;
}

// v4's copies of one K step of the implicit GEMM's tiles into shared memory. A is the im2col
// matrix (M pixels x Kg = R S C columns, kk in the order (r, s, c)), B the filters stored
// [k][kk]. The block's threads cover kRowsPerPass tile rows of kPieces 16-byte pieces (8
// columns) per pass: this thread copies piece `piece` of rows row0 + j kRowsPerPass, kRowsA
// rows of A and kRowsB of B. Each of its pixels is split into (image, h0, w0) once, when made,
// before the K loop; per step only the tap (r, s, c) of its piece is computed.
template <int kRowsA, int kRowsB, int kRowsPerPass, int kPieces>
struct Im2colCopies {
  int piece, row0;
  int a_h0[kRowsA], a_w0[kRowsA];
  int64_t a_img[kRowsA];  // offset of image n in x
  bool a_ok[kRowsA];

  // Thread tid of the block whose tile of A starts at pixel m0, for the M = N P Q pixels of s.
  __device__ __forceinline__ Im2colCopies(const ConvShape& s, int P, int Q, int M, int m0, int tid)
      : piece(tid % kPieces), row0(tid / kPieces) {
#pragma unroll
    for (int j = 0; j < kRowsA; ++j) {
      const int m = m0 + row0 + j * kRowsPerPass;
      a_ok[j] = m < M;
      const int mm = a_ok[j] ? m : 0;
      const int q = mm % Q, p = mm / Q % P, n = mm / (Q * P);
      a_h0[j] = p * s.stride - s.pad;
      a_w0[j] = q * s.stride - s.pad;
      a_img[j] = int64_t(n) * s.H * s.W * s.C;
    }
  }

  // The tap (r, t, c) of column kk of A; kk < Kg.
  static __device__ __forceinline__ void tap(const ConvShape& s, int kk, int& r, int& t, int& c) {
    const int rs = kk / s.C;
    c = kk - rs * s.C;
    r = rs / s.S;
    t = rs - r * s.S;
  }

  // C % 8 == 0, x and w 16-byte aligned: the step whose columns start at kk0, one cp.async of
  // 16 bytes (8 channels of one tap) per row; a tap in the padding, a pixel past M, a filter
  // past K or a kk past Kg is the same copy with src-size 0 (zeros land, nothing is read).
  // sA, sB: one stage, (rows, kLd) each; k0 the block's first filter.
  template <int kLd>
  __device__ __forceinline__ void copy16(bf16 (*sA)[kLd], bf16 (*sB)[kLd], const bf16* __restrict__ x,
                                         const bf16* __restrict__ w, const ConvShape& s, int Kg, int k0,
                                         int kk0) const {
    const int kk = kk0 + piece * 8;  // Kg % 8 == 0: the 8 columns kk .. kk + 7 are all in or all out
    const bool k_ok = kk < Kg;
    int r = 0, t = 0, c = 0;
    if (k_ok) tap(s, kk, r, t, c);
#pragma unroll
    for (int j = 0; j < kRowsA; ++j) {
      const int h = a_h0[j] + r, v = a_w0[j] + t;
      const bool ok = a_ok[j] && k_ok && h >= 0 && h < s.H && v >= 0 && v < s.W;
      const bf16* src = ok ? x + a_img[j] + (int64_t(h) * s.W + v) * s.C + c : x;
      wb::ptx::cp_async_16(&sA[row0 + j * kRowsPerPass][piece * 8], src, ok);
    }
#pragma unroll
    for (int j = 0; j < kRowsB; ++j) {
      const int row = row0 + j * kRowsPerPass, k = k0 + row;
      const bool ok = k < s.K && k_ok;
      wb::ptx::cp_async_16(&sB[row][piece * 8], ok ? w + int64_t(k) * Kg + kk : w, ok);
    }
  }
};

// The block tile per shape (v6, v8): the MACs of the busiest SM with tile T (T::BM pixels x
// T::BN filters), blocks dealt round-robin over `sms` SMs: ceil(blocks / SMs) tiles of BM x BN
// (the K length is the same for every tile, so it is left out).
template <class T>
long long busiest_sm_macs(int M, int K, int sms) {
  const long long blocks = (long long)wb::ceil_div(M, T::BM) * wb::ceil_div(K, T::BN);
  return wb::ceil_div(blocks, (long long)sms) * T::BM * T::BN;
}

// The index in Tiles... of the tile whose busiest SM does the least, for an M x K output on
// `sms` SMs; on a tie the one listed first (list the larger tiles first: fewer bytes from L2
// per MAC).
template <class... Tiles>
int pick_tile(int M, int K, int sms) {
  const long long costs[] = {busiest_sm_macs<Tiles>(M, K, sms)...};
  int best = 0;
  for (int i = 1; i < int(sizeof...(Tiles)); ++i) best = costs[i] < costs[best] ? i : best;
  return best;
}

// v3's and v4's launch: the GEMM's sizes (Dims: {s, P, Q, M, Kg}, M = N P Q pixels, Kg =
// R S C), a grid of (ceil(M / BM), ceil(K / BN)) blocks of kThreads, and the kernel instance
// that C allows: vec_kernel when C % 8 == 0 (16-byte copies), scalar_kernel otherwise.
template <int BM, int BN, int kThreads, class Dims, class Kernel>
void launch_implicit_gemm(Kernel vec_kernel, Kernel scalar_kernel, const bf16* x, const bf16* w, BnParams bn,
                          const bf16* residual, bf16* y, const ConvShape& s, cudaStream_t stream) {
  require_valid(s);
  Dims d{s, s.P(), s.Q(), 0, s.R * s.S * s.C};
  d.M = s.N * d.P * d.Q;
  const dim3 grid(unsigned(wb::ceil_div(d.M, BM)), unsigned(wb::ceil_div(s.K, BN)));
  if (s.C % 8 == 0) {
    vec_kernel<<<grid, kThreads, 0, stream>>>(x, w, bn, residual, y, d);
  } else {
    scalar_kernel<<<grid, kThreads, 0, stream>>>(x, w, bn, residual, y, d);
  }
  WB_CHECK_LAUNCH();
}

}  // namespace ch10::solution
