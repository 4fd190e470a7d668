// The INT4 fused GEMVs' shared parts (steps 11 and 14, decode/): their arguments, the input
// row staged in shared memory as FP32 (with the LayerNorm for ln_gemv), and the launchers'
// checks. Both steps run CTAs of kThreads threads, so stage_row is written for that size.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"

namespace ch09::solution::w4 {

constexpr int kWarps = 8, kThreads = 32 * kWarps;         // a CTA: 8 warps
constexpr int kPiecesPerGroup = kInt4Group / kInt4Piece;  // 4 loads of 32 codes make a group

struct W4Args {
  const bf16 *x, *r;         // (K) the input, and (or null) the row added to it first: the residual pair
  const bf16 *gamma, *beta;  // (K) the LayerNorm's scale and shift (kNorm)
  bf16* h;                   // (K) h = bf16(x + r), written by CTA 0; or null
  const uint8_t* q;          // (N, K / 2) codes, the layout of ch09.cuh
  const float* scale;        // (N, G) per group
  const uint8_t* zero;       // (N, G) per group
  const bf16* b;             // (N), or null for Epilogue::None
  const bf16* res;           // (N) kResidual: y = res + (W~ · x + b); y may be res itself
  bf16* y;                   // (N)
  int N, K;
  Epilogue epi;
  float eps;
  bool vec;                // 16-byte loads of x, r, gamma, beta and stores of h (all 16-byte aligned)
  KvCacheTarget<bf16> kv;  // kv.k_cache not null: y is the QKV row, its keys and values go to the cache too
};

// Where element k of the staged row lives, as a float index into the padded slots.
__device__ __forceinline__ int slot_of(int k) { return 4 * int4_x_slot(k / 4) + k % 4; }

__device__ __forceinline__ uint4 piece8(const bf16* p, int i) { return reinterpret_cast<const uint4*>(p)[i]; }

// Piece i (elements 8i .. 8i + 7) of the residual stream: bf16(x + r) element by element, or x
// without r. Both pieces are requested before either is used.
__device__ __forceinline__ uint4 residual8(const W4Args& a, int i) {
  const uint4 xv = piece8(a.x, i);
  if (a.r == nullptr) return xv;
  const uint4 rv = piece8(a.r, i);
  uint4 out;
  const auto* x2 = reinterpret_cast<const __nv_bfloat162*>(&xv);
  const auto* r2 = reinterpret_cast<const __nv_bfloat162*>(&rv);
  auto* o2 = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 xf = __bfloat1622float2(x2[e]), rf = __bfloat1622float2(r2[e]);
    o2[e] = __floats2bfloat162_rn(xf.x + rf.x, xf.y + rf.y);  // one rounding each, as the scalar path
  }
  return out;
}

// The CTA's input row into shared memory as FP32: v = bf16(x + r) (the residual stream,
// rounded once; CTA 0 stores it to h), then with kNorm the LayerNorm of v, each value rounded
// to BF16. A thread touches the same elements in every pass (16-byte pieces i = t, t + 256, ...
// with a.vec, else elements), so the passes need no barrier between them besides block_sum's.
// The vector path requests a piece of x and r (and of gamma and beta) before using any: at
// GPT-2's sizes (C <= 2048) that is all of a thread's share, one trip to L2 (v6's stage_row
// says what the element-by-element path costs). A longer row (gemv_residual's K = 4C) is
// kAhead pieces per thread per trip: all of them requested, then all stored (v11: 1; step 14:
// 4, so K = 6400 is one trip instead of four). Ends with a barrier.
template <bool kNorm, int kAhead = 1>
__device__ __forceinline__ void stage_row(const W4Args& a, float* s, float* red) {
  float sum = 0.0f;
  if (a.vec) {
    for (int i0 = threadIdx.x; i0 < a.K / 8; i0 += kAhead * kThreads) {
      uint4 out[kAhead];
#pragma unroll
      for (int j = 0; j < kAhead; ++j) {
        if (i0 + j * kThreads < a.K / 8) out[j] = residual8(a, i0 + j * kThreads);
      }
#pragma unroll
      for (int j = 0; j < kAhead; ++j) {
        const int i = i0 + j * kThreads;
        if (i >= a.K / 8) break;
        const bf16* oe = reinterpret_cast<const bf16*>(&out[j]);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float vr = __bfloat162float(oe[e]);
          s[slot_of(8 * i + e)] = vr;
          if constexpr (kNorm) sum += vr;
        }
        if (a.h != nullptr && blockIdx.x == 0) reinterpret_cast<uint4*>(a.h)[i] = out[j];
      }
    }
  } else {
    for (int k = threadIdx.x; k < a.K; k += kThreads) {
      float v = __bfloat162float(a.x[k]);
      if (a.r != nullptr) v += __bfloat162float(a.r[k]);
      const bf16 vt = __float2bfloat16(v);
      s[slot_of(k)] = __bfloat162float(vt);
      if (a.h != nullptr && blockIdx.x == 0) a.h[k] = vt;
      if constexpr (kNorm) sum += __bfloat162float(vt);
    }
  }
  if constexpr (kNorm) {
    // Two passes (the mean, then the squared deviations) over this thread's own elements.
    const int per = a.vec ? 8 : 1, count = a.K / per;
    const float mean = wb::block_sum<kThreads>(sum, red) / static_cast<float>(a.K);
    float sq = 0.0f;
    for (int i = threadIdx.x; i < count; i += kThreads) {
      for (int e = 0; e < per; ++e) {
        const float d = s[slot_of(i * per + e)] - mean;
        sq += d * d;
      }
    }
    const float rstd = rsqrtf(wb::block_sum<kThreads>(sq, red + kWarps) / static_cast<float>(a.K) + a.eps);
    for (int i = threadIdx.x; i < count; i += kThreads) {
      if (a.vec) {
        const uint4 gv = piece8(a.gamma, i), bv = piece8(a.beta, i);
        const bf16* ge = reinterpret_cast<const bf16*>(&gv);
        const bf16* be = reinterpret_cast<const bf16*>(&bv);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          float& v = s[slot_of(8 * i + e)];
          v = __bfloat162float(__float2bfloat16((v - mean) * rstd * __bfloat162float(ge[e]) + __bfloat162float(be[e])));
        }
      } else {
        float& v = s[slot_of(i)];
        v = __bfloat162float(
            __float2bfloat16((v - mean) * rstd * __bfloat162float(a.gamma[i]) + __bfloat162float(a.beta[i])));
      }
    }
  }
  __syncthreads();
}

// Whether the 16-byte paths may run: x, r, gamma and beta read and h stored 16 bytes at a time
// (K % 32 == 0: every row is whole 16-byte pieces).
inline bool vec_ok(const W4Args& a, bool norm) {
  using wb::aligned16;
  return aligned16(a.x) && (a.r == nullptr || aligned16(a.r)) && (!norm || (aligned16(a.gamma) && aligned16(a.beta))) &&
         (a.h == nullptr || aligned16(a.h));
}

inline void require_w4(const char* name, int K, const float* scale, const uint8_t* zero, const uint8_t* q) {
  require_int4(K, scale, zero);
  if (K > kInt4MaxK) {
    throw std::invalid_argument(std::string(name) + " = " + std::to_string(K) + ": the input row is staged in " +
                                "shared memory as FP32, which holds at most " + std::to_string(kInt4MaxK) +
                                " elements here");
  }
  if (!wb::aligned16(q)) throw std::invalid_argument("q is not 16-byte aligned: INT4 rows are read in 16-byte loads");
}

inline W4Args w4_args(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, const uint8_t* q,
                      const float* scale, const uint8_t* zero, const bf16* b, bf16* y, int N, int K, Epilogue epi,
                      float eps) {
  W4Args a{};
  a.x = x, a.r = r, a.gamma = gamma, a.beta = beta, a.h = h, a.q = q, a.scale = scale, a.zero = zero, a.b = b;
  a.y = y, a.N = N, a.K = K, a.epi = epi, a.eps = eps;
  return a;
}

// The fused ops' arguments, checked as every launcher of them checks them (`op` names the
// launcher in the messages).
inline W4Args ln_gemv_w4_args(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                              const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* y, int N, int C,
                              Epilogue epi, float eps) {
  require_valid(1, N, C, epi, b);
  require_w4("C", C, scale, zero, q);
  return w4_args(x, r, gamma, beta, h, q, scale, zero, b, y, N, C, epi, eps);
}

inline W4Args ln_gemv_qkv_w4_args(const char* op, const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta,
                                  const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* h,
                                  bf16* qkv, int C, float eps, const KvCacheTarget<bf16>& kv) {
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  require_w4("C", C, scale, zero, q);
  if (kv.k_cache == nullptr || kv.v_cache == nullptr || kv.pos == nullptr || kv.H * kv.D != C || kv.P < 1) {
    throw std::invalid_argument(std::string(op) +
                                ": the cache needs k and v, a position, and H * D = C (H = " + std::to_string(kv.H) +
                                ", D = " + std::to_string(kv.D) + ", C = " + std::to_string(C) + ")");
  }
  W4Args a = w4_args(x, r, gamma, beta, h, q, scale, zero, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  a.kv = kv;
  return a;
}

inline W4Args gemv_residual_w4_args(const char* op, const bf16* x, const uint8_t* q, const float* scale,
                                    const uint8_t* zero, const bf16* b, const bf16* res, bf16* y, int N, int K) {
  require_valid(1, N, K, Epilogue::Bias, b);
  require_w4("K", K, scale, zero, q);
  if (res == nullptr)
    throw std::invalid_argument(std::string("res is null: ") + op + " adds the residual in its epilogue");
  W4Args a = w4_args(x, nullptr, nullptr, nullptr, nullptr, q, scale, zero, b, y, N, K, Epilogue::Bias, 0.0f);
  a.res = res;
  return a;
}

}  // namespace ch09::solution::w4
