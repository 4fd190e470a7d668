// Harness self-tests for chapter 8: flash-attention launchers (attention/f32) with the
// mistakes learners make. Each must be rejected by the same checks the learner's kernels
// meet, with the outcome code it declares. If one of them passes, the harness has gone soft.
//
// All of them share one simple, otherwise correct flash kernel (a warp per block, a thread
// per query row; tiles of 16 keys and values staged in shared memory with 16-byte copies;
// the online softmax one key at a time; the output row accumulated in shared memory), with
// exactly one mistake switched on by a template parameter:
//
//   launcher                  mistake                                        caught by
//   no_rescale                when a key raises the row max, the running     every row with a
//                             sum is rescaled but the output is not          rising max (Wrong)
//   causal_off_by_one         with the mask, key i + Sk - Sq + 1 is visible  any masked shape
//                             too (the diagonal's right neighbour)           (Wrong)
//   reads_past_last_tile      the last, partial key tile is loaded whole:    the fenced second
//                             up to 15 rows past Sk (the scores only use     call (OobRead)
//                             keys < Sk, so the values are right)
//   missing_barrier           the key tile is used without waiting for its   stale shared memory
//                             copies (no cp.async wait, no __syncthreads)     (Wrong, NaN, ...)
//   scale_twice               s = q.k * scale * scale                        every shape (Wrong)
//
// The copies are cp.async (sm_80 and newer), so that "used before it arrived" is what
// happens every time, not a race that is sometimes won; before sm_80 they are plain loads.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "../../solutions/ch05_wmma/async_copy.cuh"
#include "ch08.cuh"
#include "cuda/errors.cuh"

namespace ch08::broken {

AttentionF32Fn no_rescale;
AttentionF32Fn causal_off_by_one;
AttentionF32Fn reads_past_last_tile;
AttentionF32Fn missing_barrier;
AttentionF32Fn scale_twice;

namespace {

constexpr int kRows = 32;  // query rows per block: one warp, a row per thread
constexpr int kKeys = 16;  // keys per tile

enum class Mistake { NoRescale, CausalOffByOne, ReadsPastLastTile, MissingBarrier, ScaleTwice };

// 16 bytes from global to shared memory (zeros when !valid).
__device__ __forceinline__ void copy16(float* dst, const float* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  ch05::solution::cp_async_16(dst, src, valid);
#else
  *reinterpret_cast<float4*>(dst) = valid ? *reinterpret_cast<const float4*>(src) : make_float4(0, 0, 0, 0);
#endif
}

// Dynamic shared memory: q rows and o rows (kRows x D each), the k and v tiles (kKeys x D).
template <Mistake kM>
__global__ void __launch_bounds__(kRows)
    broken_flash(const float* q, const float* k, const float* v, float* o, float* lse, int Sq, int Sk, int D,
                 float scale, bool causal) {
  extern __shared__ __align__(16) float smem[];
  float* qs = smem;                // (kRows, D)
  float* os = qs + kRows * D;      // (kRows, D)
  float* ks = os + kRows * D;      // (kKeys, D)
  float* vs = ks + kKeys * D;      // (kKeys, D)
  const int tid = threadIdx.x, row = blockIdx.x * kRows + tid;
  const size_t bh = blockIdx.y;
  const float* kh = k + bh * Sk * D;
  const float* vh = v + bh * Sk * D;
  for (int d = 0; d < D; ++d) {
    qs[tid * D + d] = row < Sq ? q[(bh * Sq + row) * D + d] : 0.0f;
    os[tid * D + d] = 0.0f;
  }
  const int last = causal ? row + Sk - Sq + (kM == Mistake::CausalOffByOne ? 1 : 0) : Sk - 1;
  const float s_scale = kM == Mistake::ScaleTwice ? scale * scale : scale;
  float m = -INFINITY, l = 0.0f;
  for (int kv0 = 0; kv0 < Sk; kv0 += kKeys) {
    const int valid = min(kKeys, Sk - kv0);  // keys of this tile that exist
    const int rows = kM == Mistake::ReadsPastLastTile ? kKeys : valid;
    for (int c = tid; c < kKeys * D / 4; c += kRows) {
      const int r = c / (D / 4), p = c % (D / 4);
      const bool in = r < rows;
      copy16(ks + r * D + p * 4, in ? kh + static_cast<size_t>(kv0 + r) * D + p * 4 : kh, in);
      copy16(vs + r * D + p * 4, in ? vh + static_cast<size_t>(kv0 + r) * D + p * 4 : vh, in);
    }
    ch05::solution::cp_async_commit();
    if constexpr (kM != Mistake::MissingBarrier) {
      ch05::solution::cp_async_wait<0>();
      __syncthreads();
    }
    if (row < Sq) {
      for (int j = 0; j < valid; ++j) {
        const int key = kv0 + j;
        if (key > last) break;  // keys only grow
        float dot = 0.0f;
        for (int d = 0; d < D; ++d) dot = fmaf(qs[tid * D + d], ks[j * D + d], dot);
        const float s = dot * s_scale;
        if (s > m) {  // a new max: rescale what was accumulated under the old one
          const float alpha = expf(m - s);  // m = -inf: 0
          l *= alpha;
          if constexpr (kM != Mistake::NoRescale) {
            for (int d = 0; d < D; ++d) os[tid * D + d] *= alpha;
          }
          m = s;
        }
        const float p = expf(s - m);
        l += p;
        for (int d = 0; d < D; ++d) os[tid * D + d] = fmaf(p, vs[j * D + d], os[tid * D + d]);
      }
    }
    ch05::solution::cp_async_wait<0>();
    __syncthreads();  // the tile is free for the next one
  }
  if (row < Sq) {
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int d = 0; d < D; ++d) o[(bh * Sq + row) * D + d] = os[tid * D + d] * inv;
    lse[bh * Sq + row] = l > 0.0f ? m + logf(l) : -INFINITY;
  }
}

template <Mistake kM>
void run(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq, int Sk, int D,
         float scale, bool causal, cudaStream_t stream) {
  const int smem = (2 * kRows + 2 * kKeys) * D * static_cast<int>(sizeof(float));  // 48 KB at D = 128
  broken_flash<kM><<<dim3((Sq + kRows - 1) / kRows, B * H), kRows, smem, stream>>>(q, k, v, o, lse, Sq, Sk, D, scale,
                                                                                   causal);
  WB_CHECK_LAUNCH();
}

}  // namespace

// The running output is not multiplied by exp(m_old - m_new) when the max rises.
void no_rescale(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq, int Sk,
                int D, float scale, bool causal, void*, cudaStream_t stream) {
  run<Mistake::NoRescale>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

// With the mask, query i also sees key i + Sk - Sq + 1.
void causal_off_by_one(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                       int Sk, int D, float scale, bool causal, void*, cudaStream_t stream) {
  run<Mistake::CausalOffByOne>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

// Loads all 16 rows of the last key tile even when fewer keys are left: a read past the end
// of k and v for the last head (the values are never used, so only the fence sees it).
void reads_past_last_tile(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                          int Sk, int D, float scale, bool causal, void*, cudaStream_t stream) {
  run<Mistake::ReadsPastLastTile>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

// Uses the key and value tiles before their copies have landed.
void missing_barrier(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                     int Sk, int D, float scale, bool causal, void*, cudaStream_t stream) {
  run<Mistake::MissingBarrier>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

// Multiplies the scores by the scale twice (once folded in, once more by hand).
void scale_twice(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq, int Sk,
                 int D, float scale, bool causal, void*, cudaStream_t stream) {
  run<Mistake::ScaleTwice>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

}  // namespace ch08::broken

// --- as the harness sees them: each must be rejected with one of the codes it declares.
#include "spec/op.cuh"

namespace ch08::broken {

WB_VARIANTS(ch08_broken, wb::Role::Broken) {
  using wb::Code;
  const char* f32 = "attention/f32";
  return {
      wb::variant(f32, "no_rescale", &no_rescale)
          .rejected_as({Code::Wrong}, "online softmax that does not rescale the running output when the max rises"),
      wb::variant(f32, "causal_off_by_one", &causal_off_by_one)
          .rejected_as({Code::Wrong}, "causal mask that also shows the key right of the diagonal"),
      wb::variant(f32, "reads_past_last_tile", &reads_past_last_tile)
          .rejected_as({Code::OobRead, Code::Fault}, "the last partial key tile loaded past Sk"),
      wb::variant(f32, "missing_barrier", &missing_barrier)
          .rejected_as({Code::Wrong, Code::NaN, Code::Nondeterministic},
                       "the key tile used before its copies have landed (no wait, no barrier)"),
      wb::variant(f32, "scale_twice", &scale_twice).rejected_as({Code::Wrong}, "scores multiplied by the scale twice"),
  };
}

}  // namespace ch08::broken
