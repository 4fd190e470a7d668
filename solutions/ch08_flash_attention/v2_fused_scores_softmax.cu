// v2 — scores, mask and softmax fused into one kernel: p is written once, and nothing else
// of size Sq x Sk touches DRAM.
//
// What changes over v1: a block of 256 threads owns 64 query rows of one head. Their q tile
// sits in shared memory (transposed, so a thread reads its 4 rows as one float4), and the
// keys stream through in tiles of 64 (in chunks of 32 columns of d, transposed too), each
// key row read from DRAM once per block instead of once per score. Each thread computes a
// 4 x 4 block of scores: rows 4 rg .. 4 rg + 3 (rg = thread / 16) and keys cg, cg + 16,
// cg + 32, cg + 48 (cg = thread % 16), 16 FMAs per 5 shared-memory loads.
//
// The softmax of a row needs the row's max and sum before its first p can be written, and
// they depend on every key. v2 sweeps the keys twice:
//   sweep 1  scores tile by tile; each thread keeps a running (max, sum) of its 4 rows over
//            its own keys (when the max rises, the sum is multiplied by exp(m_old - m_new));
//            at the end the 16 threads of a row merge their pairs with 4 shuffles
//   sweep 2  the same scores again, and p = exp(s - m) / l written once (0 where hidden)
// Recomputing Q K^T costs twice the FLOPs; storing the scores and reading them back would
// cost two more passes of Sq x Sk over DRAM. At D = 64 in FP32 the two are of the same
// order; at small D recomputing wins, and it is the trade flash attention makes for good.
// Key tiles entirely right of the block's last visible key are skipped in sweep 1 and
// written as zeros in sweep 2.
//
// Traffic (B 4, H 16, S 4096, D 64): p written once (4.3 GB) against v1's five passes; q and
// k read 64 x fewer times than the naive scores kernel asked L2 for them.
//
// From attention_common.cuh: the checks, scale_and_mask (a thread's scores of a row, scaled
// and masked) and with_padded_head (the kernel instance for D).
//
// Run: build/ch08/bin/ch08_bench --op=attention_probs --impl=v2_fused_scores_softmax,v1_unfused,cublas_gemm_softmax
#include <cmath>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch08::solution {
namespace {

constexpr int kBr = 64;     // query rows per block
constexpr int kBc = 64;     // keys per tile
constexpr int kChunk = 32;  // columns of d staged at a time
constexpr int kThreads = 256;
static_assert(kBr == 4 * (kThreads / 16) && kBc == 4 * 16, "a 16 x 16 grid of threads, 4 x 4 scores each");

template <int kD>
__global__ void __launch_bounds__(kThreads) fused_probs_kernel(const float* q, const float* k, float* p, float* lse,
                                                               int Sq, int Sk, int D, float scale, bool causal) {
  static_assert(kD % kChunk == 0 && kD <= 128, "head size: whole chunks of 32, at most 128");
  __shared__ __align__(16) float qt[kD][kBr + 4];  // (kD, kBr) the query tile, transposed; +4 keeps float4 rows aligned
  __shared__ float kt[kChunk][kBc + 1];  // (32, kBc) 32 columns of d of the key tile, transposed; +1: no conflicts
  const int tid = threadIdx.x, rg = tid / 16, cg = tid % 16;
  const size_t bh = blockIdx.y;
  const int q0 = blockIdx.x * kBr;
  const float* qh = q + bh * Sq * D;
  const float* kh = k + bh * Sk * D;

  for (int e = tid; e < kBr * kD; e += kThreads) {  // zeros past Sq and past D
    const int r = e / kD, d = e % kD;
    qt[d][r] = (q0 + r < Sq && d < D) ? qh[static_cast<size_t>(q0 + r) * D + d] : 0.0f;
  }

  // The 4 x 4 scores of this thread for the key tile at kv0: scaled, and -inf where hidden.
  auto tile_scores = [&](int kv0, float(&s)[4][4]) {
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) s[r][c] = 0.0f;
    for (int d0 = 0; d0 < kD; d0 += kChunk) {
      __syncthreads();                                      // kt is free (and, the first time, qt is complete)
      for (int e = tid; e < kChunk * kBc; e += kThreads) {  // consecutive threads: consecutive d of one key
        const int c = e / kChunk, dd = e % kChunk, j = kv0 + c, d = d0 + dd;
        kt[dd][c] = (j < Sk && d < D) ? kh[static_cast<size_t>(j) * D + d] : 0.0f;
      }
      __syncthreads();
#pragma unroll 8
      for (int dd = 0; dd < kChunk; ++dd) {
        const float4 a = *reinterpret_cast<const float4*>(&qt[d0 + dd][4 * rg]);
        const float ar[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const float b = kt[dd][cg + 16 * c];
#pragma unroll
          for (int r = 0; r < 4; ++r) s[r][c] = fmaf(ar[r], b, s[r][c]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) scale_and_mask(s[r], q0 + 4 * rg + r, kv0 + cg, Sq, Sk, scale, causal);
  };

  // Sweep 1: running max and sum per row, over this thread's keys.
  const int tiles = key_tiles(q0, kBr, Sq, Sk, kBc, causal);
  float m[4], l[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) m[r] = -INFINITY, l[r] = 0.0f;
  float s[4][4];
  for (int t = 0; t < tiles; ++t) {
    tile_scores(t * kBc, s);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float m_new = fmaxf(m[r], fmaxf(fmaxf(s[r][0], s[r][1]), fmaxf(s[r][2], s[r][3])));
      if (m_new == -INFINITY) continue;  // nothing visible to this thread in this row yet
      float add = 0.0f;
#pragma unroll
      for (int c = 0; c < 4; ++c) add += expf(s[r][c] - m_new);  // exp(-inf) = 0
      l[r] = l[r] * expf(m[r] - m_new) + add;                    // m[r] = -inf: the old sum is 0
      m[r] = m_new;
    }
  }
  // The 16 threads of a row (one half-warp) merge their (max, sum) pairs.
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int o = 8; o > 0; o /= 2) {
      const float m_o = __shfl_xor_sync(0xFFFFFFFFu, m[r], o), l_o = __shfl_xor_sync(0xFFFFFFFFu, l[r], o);
      const float m_new = fmaxf(m[r], m_o);
      const float a = m_new == -INFINITY ? 0.0f : expf(m[r] - m_new);
      const float b = m_new == -INFINITY ? 0.0f : expf(m_o - m_new);
      l[r] = l[r] * a + l_o * b;
      m[r] = m_new;
    }
  }

  // Sweep 2: every key tile of the row, p written once.
  float inv[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) inv[r] = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
  float* ph = p + bh * Sq * Sk;
  const int all_tiles = ceil_div(Sk, kBc);
  for (int t = 0; t < all_tiles; ++t) {
    const int kv0 = t * kBc;
    if (t < tiles) tile_scores(kv0, s);  // t < tiles is the same for the whole block
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = q0 + 4 * rg + r;
      if (i >= Sq) continue;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = kv0 + cg + 16 * c;
        // Hidden keys (and every key of a row that sees none, whose m is -inf) give 0.
        const bool hidden = t >= tiles || s[r][c] == -INFINITY;
        if (j < Sk) ph[static_cast<size_t>(i) * Sk + j] = hidden ? 0.0f : expf(s[r][c] - m[r]) * inv[r];
      }
    }
  }
  if (lse != nullptr && cg == 0) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = q0 + 4 * rg + r;
      if (i < Sq) lse[bh * Sq + i] = l[r] > 0.0f ? m[r] + logf(l[r]) : -INFINITY;
    }
  }
}

template <int kD>
void launch(const float* q, const float* k, float* p, float* lse, int B, int H, int Sq, int Sk, int D, float scale,
            bool causal, cudaStream_t stream) {
  fused_probs_kernel<kD>
      <<<dim3(ceil_div(Sq, kBr), B * H), kThreads, 0, stream>>>(q, k, p, lse, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

void fused_probs(const float* q, const float* k, float* p, float* lse, int B, int H, int Sq, int Sk, int D, float scale,
                 bool causal, cudaStream_t stream) {
  check_args("v2_fused_scores_softmax", B, H, Sq, Sk, D);
  with_padded_head(D, [&](auto kd) { launch<kd.value>(q, k, p, lse, B, H, Sq, Sk, D, scale, causal, stream); });
}

}  // namespace

void v2_probs_f32(const float* q, const float* k, float* p, int B, int H, int Sq, int Sk, int D, float scale,
                  bool causal, cudaStream_t stream) {
  fused_probs(q, k, p, nullptr, B, H, Sq, Sk, D, scale, causal, stream);
}

void v2_attention_f32(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                      int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  if (scratch == nullptr) {
    throw std::invalid_argument("v2_fused_scores_softmax needs its probabilities buffer (variants.cu declares it)");
  }
  float* pbuf = static_cast<float*>(scratch);
  fused_probs(q, k, pbuf, lse, B, H, Sq, Sk, D, scale, causal, stream);
  pv_f32(pbuf, v, o, B * H, Sq, Sk, D, stream);
}

}  // namespace ch08::solution
