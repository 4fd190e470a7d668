// Fixture submission "fast", chapter 8, exercise 4: BF16 attention on CUDA cores, a warp per query
// row with the online softmax over the keys in FP32 (the solution's step v4 cannot be compiled in
// here: it includes chapter 5's mma_common.cuh, which needs chapter 5's interface header, on the
// include path of chapter 8's solution library only).
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

// One warp per (b, h, i); rows numbered (b * H + h) * Sq + i.
__global__ void __launch_bounds__(kWarps * 32)
    attention_rows_kernel(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, long long rows, int Sq,
                          int Sk, int D, float scale, bool causal) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const long long bh = row / Sq;
  const int i = static_cast<int>(row % Sq);
  const size_t kv = static_cast<size_t>(bh) * Sk * D;
  attend_row(q + static_cast<size_t>(row) * D, k + kv, v + kv, D, visible_keys(i, Sq, Sk, causal), D, scale,
             o + static_cast<size_t>(row) * D, lse + row);
}

}  // namespace

void student::flash_attention_mma(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H,
                                  int Sq, int Sk, int D, float scale, bool causal, void* scratch,
                                  cudaStream_t stream) {
  (void)scratch;
  const long long rows = static_cast<long long>(B) * H * Sq;
  const unsigned blocks = static_cast<unsigned>((rows + kWarps - 1) / kWarps);
  attention_rows_kernel<<<blocks, kWarps * 32, 0, stream>>>(q, k, v, o, lse, rows, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
