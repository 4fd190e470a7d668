// v3 — flash attention on CUDA cores, FP32: no score ever leaves the chip.
//
// What changes over v2: the output itself is accumulated in the same pass. A block of 256
// threads owns 64 query rows; tiles of 32 keys stream through shared memory, and each tile
// is used for both products before the next one comes:
//
//   S    = scale * Q K_t^T              (64 x 32)   thread: rows 4 rg .. +3, keys cg, cg + 16
//   mask                                 hidden keys (and keys past Sk) -> -inf
//   m'   = max(m, rowmax(S))             half-warp shuffles: a row's 32 scores live in 16 threads
//   P    = exp(S - m'),  alpha = exp(m - m')
//   l    = alpha l + rowsum(P)
//   O    = alpha O + P V_t               (64 x D)   thread: rows 4 rg .. +3, d = cg + 16 c
//
// and once at the end O / l and lse = m + log(l). This is the online softmax of chapter 7
// applied to a whole output row: a rise of the maximum rescales what was accumulated under
// the old one. Nothing of size Sq x Sk exists, in memory or anywhere else, and the work per
// block is proportional to the keys it visits: with the mask, tiles right of the block's
// last visible key are never loaded (about half of the tiles at Sq = Sk), and the blocks
// with the most tiles (the last rows) are launched first, so the short ones fill the gaps.
//
// Shared memory (dynamic, 60 KB at D = 128: above the 48 KB default, so the launcher opts in):
//   qt  (kD, 64 + 4)   the query tile, transposed: a thread reads its 4 rows as one float4
//   kv  (kD, 32 + 1)   the key tile, transposed (+1: the transposing stores are conflict
//                      free), then, in the same space, (32, kD) the value tile
//   pt  (32, 64 + 4)   P, transposed, for the second product
// Rows that see no key at all (the mask with Sq > Sk) keep m = -inf; m is then replaced by 0
// inside exp, so that exp(-inf - (-inf)) never makes a NaN, and their o is 0, lse -inf.
//
// Why not faster: every FMA of both products reads shared memory (one float4 and one or two
// floats per 4 to 8 FMAs), and FP32 runs at 1/16 of the BF16 tensor-core rate. v4 moves
// both products to tensor cores and the operands to registers.
//
// From attention_common.cuh: the checks, scale_and_mask (as v2) and with_padded_head.
//
// Run: build/ch08/bin/ch08_bench --op=attention --dtype=f32 --impl=v3_flash_f32,v1_unfused,cublas_unfused
#include <cmath>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch08::solution {
namespace {

constexpr int kBr = 64;  // query rows per block
constexpr int kBc = 32;  // keys per tile
constexpr int kThreads = 256;
constexpr int kQt = kBr + 4, kKt = kBc + 1, kPt = kBr + 4;  // shared-memory row pitches (floats)
static_assert(kBr == 4 * (kThreads / 16) && kBc == 2 * 16, "16 x 16 threads: 4 rows x 2 keys of scores each");

template <int kD>
constexpr int smem_floats() {
  constexpr int kv = kD * kKt > kBc * kD ? kD * kKt : kBc * kD;
  return kD * kQt + kv + kBc * kPt;
}

template <int kD>
__global__ void __launch_bounds__(kThreads)
    flash_f32_kernel(const float* q, const float* k, const float* v, float* o, float* lse, int Sq, int Sk, int D,
                     float scale, bool causal) {
  static_assert(kD % 16 == 0 && kD <= 128, "head size: 16 threads share a row's d columns; at most 128");
  constexpr int kC = kD / 16;  // output columns per thread
  extern __shared__ __align__(16) float smem[];
  float* qt = smem;                                              // (kD, kQt)
  float* kv = qt + kD * kQt;                                     // (kD, kKt) keys, then (kBc, kD) values
  float* pt = kv + (kD * kKt > kBc * kD ? kD * kKt : kBc * kD);  // (kBc, kPt)

  const int tid = threadIdx.x, rg = tid / 16, cg = tid % 16;
  const size_t bh = blockIdx.y;
  const int q_tile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // most key tiles first
  const int q0 = q_tile * kBr;
  const float* qh = q + bh * Sq * D;
  const float* kh = k + bh * Sk * D;
  const float* vh = v + bh * Sk * D;

  for (int e = tid; e < kBr * kD; e += kThreads) {  // consecutive threads: consecutive d (coalesced reads)
    const int r = e / kD, d = e % kD;
    qt[d * kQt + r] = (q0 + r < Sq && d < D) ? qh[static_cast<size_t>(q0 + r) * D + d] : 0.0f;
  }

  float m[4], l[4], acc[4][kC];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < kC; ++c) acc[r][c] = 0.0f;
  }

  const int tiles = key_tiles(q0, kBr, Sq, Sk, kBc, causal);
  for (int t = 0; t < tiles; ++t) {
    const int kv0 = t * kBc;
    __syncthreads();  // every thread is done with the previous tile's values and P (and qt is complete)
    for (int e = tid; e < kBc * kD; e += kThreads) {
      const int c = e / kD, d = e % kD, j = kv0 + c;
      kv[d * kKt + c] = (j < Sk && d < D) ? kh[static_cast<size_t>(j) * D + d] : 0.0f;
    }
    __syncthreads();

    // S = Q K^T for this thread's 4 rows and 2 keys.
    float s[4][2] = {};
#pragma unroll 4
    for (int d = 0; d < kD; ++d) {
      const float4 a = *reinterpret_cast<const float4*>(&qt[d * kQt + 4 * rg]);
      const float b0 = kv[d * kKt + cg], b1 = kv[d * kKt + cg + 16];
      s[0][0] = fmaf(a.x, b0, s[0][0]), s[0][1] = fmaf(a.x, b1, s[0][1]);
      s[1][0] = fmaf(a.y, b0, s[1][0]), s[1][1] = fmaf(a.y, b1, s[1][1]);
      s[2][0] = fmaf(a.z, b0, s[2][0]), s[2][1] = fmaf(a.z, b1, s[2][1]);
      s[3][0] = fmaf(a.w, b0, s[3][0]), s[3][1] = fmaf(a.w, b1, s[3][1]);
    }

    // Scale, mask, and the online softmax per row (the row's 16 threads are one half-warp).
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      scale_and_mask(s[r], q0 + 4 * rg + r, kv0 + cg, Sq, Sk, scale, causal);
      float mx = fmaxf(s[r][0], s[r][1]);
#pragma unroll
      for (int o2 = 8; o2 > 0; o2 /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, o2));
      const float m_new = fmaxf(m[r], mx);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with nothing visible yet
      const float alpha = expf(m[r] - m_use);                 // 0 while m[r] is -inf
      const float p0 = expf(s[r][0] - m_use), p1 = expf(s[r][1] - m_use);
      float rs = p0 + p1;
#pragma unroll
      for (int o2 = 8; o2 > 0; o2 /= 2) rs += __shfl_xor_sync(0xFFFFFFFFu, rs, o2);
      l[r] = l[r] * alpha + rs;
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < kC; ++c) acc[r][c] *= alpha;
      pt[cg * kPt + 4 * rg + r] = p0;
      pt[(cg + 16) * kPt + 4 * rg + r] = p1;
    }
    __syncthreads();  // the key tile is no longer read; P is complete

    for (int e = tid; e < kBc * kD; e += kThreads) {
      const int c = e / kD, d = e % kD, j = kv0 + c;
      kv[c * kD + d] = (j < Sk && d < D) ? vh[static_cast<size_t>(j) * D + d] : 0.0f;
    }
    __syncthreads();

    // O += P V for this thread's 4 rows and kC columns.
#pragma unroll 4
    for (int c = 0; c < kBc; ++c) {
      const float4 a = *reinterpret_cast<const float4*>(&pt[c * kPt + 4 * rg]);
#pragma unroll
      for (int cc = 0; cc < kC; ++cc) {
        const float b = kv[c * kD + cg + 16 * cc];
        acc[0][cc] = fmaf(a.x, b, acc[0][cc]);
        acc[1][cc] = fmaf(a.y, b, acc[1][cc]);
        acc[2][cc] = fmaf(a.z, b, acc[2][cc]);
        acc[3][cc] = fmaf(a.w, b, acc[3][cc]);
      }
    }
  }

  // One division per row, at the end; rows that saw no key: o = 0, lse = -inf.
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = q0 + 4 * rg + r;
    if (i >= Sq) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    float* oi = o + (bh * Sq + i) * D;
#pragma unroll
    for (int cc = 0; cc < kC; ++cc) {
      const int d = cg + 16 * cc;
      if (d < D) oi[d] = acc[r][cc] * inv;
    }
    if (cg == 0) lse[bh * Sq + i] = l[r] > 0.0f ? m[r] + logf(l[r]) : -INFINITY;
  }
}

template <int kD>
void launch(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq, int Sk, int D,
            float scale, bool causal, cudaStream_t stream) {
  constexpr int kSmem = smem_floats<kD>() * static_cast<int>(sizeof(float));
  // Above 48 KB a kernel must opt in (once per instantiation).
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(flash_f32_kernel<kD>, kSmem);
  flash_f32_kernel<kD>
      <<<dim3(ceil_div(Sq, kBr), B * H), kThreads, kSmem, stream>>>(q, k, v, o, lse, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace

void v3_attention_f32(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                      int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  (void)scratch;
  check_args("v3_flash_f32", B, H, Sq, Sk, D);
  with_padded_head(D, [&](auto kd) { launch<kd.value>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream); });
}

}  // namespace ch08::solution
