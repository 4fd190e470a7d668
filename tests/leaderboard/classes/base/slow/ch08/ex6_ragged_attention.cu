// Fixture submission "slow", chapter 8, exercise 6: the packed sequences through the same warp-per-
// row kernel as exercise 4, run twice per call: a warp per (token, query head), reading the keys of
// its own sequence only.
#include <cmath>

#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch08 {
namespace {

constexpr int kWarps = 8;          // warps per block, one query row each
constexpr int kMaxPerLane = 4;     // D <= 128: at most 4 elements of a row per lane

// One query row against n_keys keys, k and v `stride` elements apart, by one warp: lane
// l holds elements l, l + 32, ... of q and of the output; each key's score is a warp sum;
// the online softmax keeps the running max m, the sum l of exp(s - m) and the output.
__device__ void attend_row(const bf16* q, const bf16* k, const bf16* v, size_t stride, int n_keys, int D,
                           float scale, bf16* o, float* lse) {
  const int lane = threadIdx.x % 32;
  float qr[kMaxPerLane], acc[kMaxPerLane];
#pragma unroll
  for (int t = 0; t < kMaxPerLane; ++t) {
    const int d = lane + 32 * t;
    qr[t] = d < D ? __bfloat162float(q[d]) : 0.0f;
    acc[t] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int j = 0; j < n_keys; ++j) {
    const bf16* kj = k + j * stride;
    const bf16* vj = v + j * stride;
    float dot = 0.0f;
#pragma unroll
    for (int t = 0; t < kMaxPerLane; ++t) {
      const int d = lane + 32 * t;
      if (d < D) dot += qr[t] * __bfloat162float(kj[d]);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    const float s = scale * dot;
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new);  // 0 for the first key (m = -inf)
    const float p = expf(s - m_new);
    l = l * corr + p;
#pragma unroll
    for (int t = 0; t < kMaxPerLane; ++t) {
      const int d = lane + 32 * t;
      if (d < D) acc[t] = acc[t] * corr + p * __bfloat162float(vj[d]);
    }
    m = m_new;
  }
  // A row that sees no key: o = 0 and lse = -inf.
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int t = 0; t < kMaxPerLane; ++t) {
    const int d = lane + 32 * t;
    if (d < D) o[d] = __float2bfloat16(acc[t] * inv);
  }
  if (lane == 0) *lse = l > 0.0f ? m + logf(l) : -INFINITY;
}

// Keys row i sees: all Sk, or with the mask j <= i + (Sk - Sq) (bottom-right aligned).
__device__ int visible_keys(int i, int Sq, int Sk, bool causal) {
  if (!causal) return Sk;
  const int last = i + (Sk - Sq);
  return last < 0 ? 0 : (last + 1 < Sk ? last + 1 : Sk);
}

// One warp per (token i of sequence b, query head hq): grid (ceil(max_seqlen / kWarps), B * Hq).
__global__ void __launch_bounds__(kWarps * 32)
    ragged_rows_kernel(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const int* cu_seqlens, int T,
                       int Hq, int Hkv, int D, float scale, bool causal) {
  const int i = blockIdx.x * kWarps + threadIdx.x / 32;
  const int b = blockIdx.y / Hq, hq = blockIdx.y % Hq, hkv = hq / (Hq / Hkv);
  const int start = cu_seqlens[b], L = cu_seqlens[b + 1] - start;
  if (i >= L) return;
  const size_t token = static_cast<size_t>(start) + i;
  const size_t kv = static_cast<size_t>(start) * Hkv * D + static_cast<size_t>(hkv) * D;  // key 0 of the sequence
  attend_row(q + (token * Hq + hq) * D, k + kv, v + kv, static_cast<size_t>(Hkv) * D,
             visible_keys(i, L, L, causal), D, scale, o + (token * Hq + hq) * D,
             lse + static_cast<size_t>(hq) * T + token);
}

}  // namespace

void student::ragged_attention(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const int* cu_seqlens,
                               int B, int T, int Hq, int Hkv, int max_seqlen, int D, float scale, bool causal,
                               void* scratch, cudaStream_t stream) {
  require_groups("ex6_ragged_attention", Hq, Hkv);
  (void)scratch;
  if (B < 1 || T < 1 || max_seqlen < 1) return;  // no token: nothing to compute
  const dim3 grid((max_seqlen + kWarps - 1) / kWarps, B * Hq);
  ragged_rows_kernel<<<grid, kWarps * 32, 0, stream>>>(q, k, v, o, lse, cu_seqlens, T, Hq, Hkv, D, scale, causal);
  WB_CHECK_LAUNCH();
  // once more: right, and twice the time
  ragged_rows_kernel<<<grid, kWarps * 32, 0, stream>>>(q, k, v, o, lse, cu_seqlens, T, Hq, Hkv, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
