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
//
// Part 2 (BF16, at the end of this file): one simple kernel per form, a thread per query row
// running the online softmax one key at a time, again with one mistake each:
//
//   launcher                  op                      mistake                  caught by
//   ragged_reads_next         attention_ragged/bf16   keys masked at the end   a sequence whose
//                                                     of the packed buffer,    length is not a
//                                                     not of the sequence:     multiple of 16,
//                                                     the last tile of 16      unmasked (Wrong)
//                                                     keys runs into the next
//                                                     sequence
//   gqa_wrong_head            attention_gqa/bf16      kv head hq % Hkv for     any Hq != Hkv
//                                                     query head hq, not       (Wrong)
//                                                     hq / (Hq / Hkv)
//   decode_merge_average      attention_decode/bf16   the chunks' outputs      any sequence cut
//                                                     averaged, not weighted   into 2 or more
//                                                     by exp(lse_c - lse)      chunks (Wrong)
//   decode_drops_last         attention_decode/bf16   keys 0 .. L_b - 2: the   every length
//                                                     new token's own entry    (Wrong; NaN for
//                                                     left out                 L_b = 1: lse -inf)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"
#include "device/async_copy.cuh"
#include "device/vec.cuh"

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
  wb::ptx::cp_async_16(dst, src, valid);
#else
  *reinterpret_cast<float4*>(dst) = valid ? *reinterpret_cast<const float4*>(src) : make_float4(0, 0, 0, 0);
#endif
}

// Dynamic shared memory: q rows and o rows (kRows x D each), the k and v tiles (kKeys x D).
template <Mistake kM>
__global__ void __launch_bounds__(kRows) broken_flash(const float* q, const float* k, const float* v, float* o,
                                                      float* lse, int Sq, int Sk, int D, float scale, bool causal) {
  extern __shared__ __align__(16) float smem[];
  float* qs = smem;            // (kRows, D)
  float* os = qs + kRows * D;  // (kRows, D)
  float* ks = os + kRows * D;  // (kKeys, D)
  float* vs = ks + kKeys * D;  // (kKeys, D)
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
    wb::ptx::cp_async_commit();
    if constexpr (kM != Mistake::MissingBarrier) {
      wb::ptx::cp_async_wait<0>();
      __syncthreads();
    }
    if (row < Sq) {
      for (int j = 0; j < valid; ++j) {
        const int key = kv0 + j;
        if (key > last) break;  // keys only grow
        float dot = 0.0f;
        for (int d = 0; d < D; ++d) dot = fmaf(qs[tid * D + d], ks[j * D + d], dot);
        const float s = dot * s_scale;
        if (s > m) {                        // a new max: rescale what was accumulated under the old one
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
    wb::ptx::cp_async_wait<0>();
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
  broken_flash<kM>
      <<<dim3((Sq + kRows - 1) / kRows, B * H), kRows, smem, stream>>>(q, k, v, o, lse, Sq, Sk, D, scale, causal);
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
void missing_barrier(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq, int Sk,
                     int D, float scale, bool causal, void*, cudaStream_t stream) {
  run<Mistake::MissingBarrier>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

// Multiplies the scores by the scale twice (once folded in, once more by hand).
void scale_twice(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq, int Sk,
                 int D, float scale, bool causal, void*, cudaStream_t stream) {
  run<Mistake::ScaleTwice>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

// --- as the harness sees them: each must be rejected with one of the codes it declares.

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
          .rejected_as({Code::Wrong, Code::NaN, Code::Nondeterministic, Code::Race},
                       "the key tile used before its copies have landed (no wait, no barrier)"),
      wb::variant(f32, "scale_twice", &scale_twice).rejected_as({Code::Wrong}, "scores multiplied by the scale twice"),
  };
}

}  // namespace ch08::broken

// ===========================================================================================
// Part 2: grouped heads, ragged batches, decode (BF16 in and out, FP32 arithmetic).

namespace ch08::broken {

RaggedAttentionBf16Fn ragged_reads_next;
AttentionGqaBf16Fn gqa_wrong_head;
DecodeAttentionBf16Fn decode_merge_average;
DecodeAttentionBf16Fn decode_drops_last;

namespace {

constexpr int kRowThreads = 64;
constexpr int kMaxD = 128;

// Keys j0 .. j1 - 1 (rows kp + j * ld of k, vp + j * ld of v) for the query at qp, folded
// into a running (m, l, acc) with the online softmax, one key at a time.
__device__ void fold_keys(const bf16* qp, const bf16* kp, const bf16* vp, size_t ld, int j0, int j1, int D, float scale,
                          float& m, float& l, float* acc) {
  for (int j = j0; j < j1; ++j) {
    const bf16* kj = kp + static_cast<size_t>(j) * ld;
    float dot = 0.0f;
    for (int d = 0; d < D; ++d) dot = fmaf(__bfloat162float(qp[d]), __bfloat162float(kj[d]), dot);
    const float s = dot * scale;
    if (s > m) {
      const float alpha = expf(m - s);  // m = -inf: 0
      l *= alpha;
      for (int d = 0; d < D; ++d) acc[d] *= alpha;
      m = s;
    }
    const float p = expf(s - m);
    l += p;
    const bf16* vj = vp + static_cast<size_t>(j) * ld;
    for (int d = 0; d < D; ++d) acc[d] = fmaf(p, __bfloat162float(vj[d]), acc[d]);
  }
}

__device__ void write_row(bf16* op, float* lp, const float* acc, float m, float l, int D) {
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int d = 0; d < D; ++d) op[d] = __float2bfloat16_rn(acc[d] * inv);
  *lp = l > 0.0f ? m + logf(l) : -INFINITY;
}

// A thread per (t, hq) of the packed batch.
__global__ void ragged_rows(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const int* cu_seqlens,
                            int B, int T, int Hq, int Hkv, int D, float scale, bool causal) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowThreads + threadIdx.x;
  if (row >= static_cast<long long>(T) * Hq) return;
  const int t = static_cast<int>(row / Hq), hq = static_cast<int>(row % Hq), hkv = hq / (Hq / Hkv);
  int b = 0;
  while (b + 1 < B && cu_seqlens[b + 1] <= t) ++b;
  const int start = cu_seqlens[b], len = cu_seqlens[b + 1] - start, i = t - start;
  // THE MISTAKE: the last tile of 16 keys is masked at the end of the buffer (T), not at the
  // end of the sequence, so it reads (and counts) the first tokens of the next sequence.
  const int tiled = (len + 15) / 16 * 16;
  const int keys = min(tiled, T - start);
  const int visible = causal ? min(i + 1, keys) : keys;
  float acc[kMaxD];
  for (int d = 0; d < D; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const size_t ldq = static_cast<size_t>(Hq) * D, ldk = static_cast<size_t>(Hkv) * D;
  fold_keys(q + static_cast<size_t>(t) * ldq + static_cast<size_t>(hq) * D,
            k + start * ldk + static_cast<size_t>(hkv) * D, v + start * ldk + static_cast<size_t>(hkv) * D, ldk, 0,
            visible, D, scale, m, l, acc);
  write_row(o + static_cast<size_t>(t) * ldq + static_cast<size_t>(hq) * D, lse + static_cast<size_t>(hq) * T + t, acc,
            m, l, D);
}

// A thread per (b, hq, i) of dense grouped heads.
__global__ void gqa_rows(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int Hq, int Hkv,
                         int Sq, int Sk, int D, float scale, bool causal) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowThreads + threadIdx.x;
  if (row >= static_cast<long long>(B) * Hq * Sq) return;
  const long long bh = row / Sq;
  const int i = static_cast<int>(row % Sq), b = static_cast<int>(bh / Hq), hq = static_cast<int>(bh % Hq);
  const int hkv = hq % Hkv;  // THE MISTAKE: neighbouring query heads share a kv head: hq / (Hq / Hkv)
  const size_t bkv = static_cast<size_t>(b) * Hkv + hkv;
  const int visible = causal ? max(0, min(Sk, i + Sk - Sq + 1)) : Sk;
  float acc[kMaxD];
  for (int d = 0; d < D; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  fold_keys(q + row * D, k + bkv * Sk * D, v + bkv * Sk * D, D, 0, visible, D, scale, m, l, acc);
  write_row(o + row * D, lse + row, acc, m, l, D);
}

enum class DecodeMistake { MergeAverage, DropsLast };

// grid (ceil(B * Hq / kRowThreads), chunks): a thread per (b, hq) per chunk of `chunk` keys.
template <DecodeMistake kM>
__global__ void decode_chunks(const bf16* q, const bf16* kc, const bf16* vc, const int* seq_lens, float* part_o,
                              float* part_lse, int B, int Hq, int Hkv, int L_max, int D, int chunk, float scale) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowThreads + threadIdx.x;
  const long long rows = static_cast<long long>(B) * Hq;
  if (row >= rows) return;
  const int b = static_cast<int>(row / Hq), hq = static_cast<int>(row % Hq);
  const size_t bkv = static_cast<size_t>(b) * Hkv + hq / (Hq / Hkv);
  // DropsLast: THE MISTAKE is the "- 1": the newest entry, at L_b - 1, is left out.
  const int L = min(seq_lens[b], L_max) - (kM == DecodeMistake::DropsLast ? 1 : 0);
  const int j0 = blockIdx.y * chunk, j1 = min(j0 + chunk, L);
  float acc[kMaxD];
  for (int d = 0; d < D; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  fold_keys(q + row * D, kc + bkv * L_max * D, vc + bkv * L_max * D, D, j0, j1, D, scale, m, l, acc);
  const size_t part = blockIdx.y * rows + row;
  part_lse[part] = l > 0.0f ? m + logf(l) : -INFINITY;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int d = 0; d < D; ++d) part_o[part * D + d] = acc[d] * inv;
}

template <DecodeMistake kM>
__global__ void decode_merge(const float* part_o, const float* part_lse, bf16* o, float* lse, long long rows,
                             int chunks, int D) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowThreads + threadIdx.x;
  if (row >= rows) return;
  float M = -INFINITY;
  for (int c = 0; c < chunks; ++c) M = fmaxf(M, part_lse[c * rows + row]);
  float total = 0.0f;
  int used = 0;
  for (int c = 0; c < chunks; ++c) {
    total += M == -INFINITY ? 0.0f : expf(part_lse[c * rows + row] - M);
    used += part_lse[c * rows + row] > -INFINITY ? 1 : 0;
  }
  const float row_lse = M == -INFINITY ? -INFINITY : M + logf(total);
  for (int d = 0; d < D; ++d) {
    float acc = 0.0f;
    for (int c = 0; c < chunks; ++c) {
      const float lc = part_lse[c * rows + row];
      if (lc == -INFINITY) continue;
      // MergeAverage: THE MISTAKE is the weight 1 / used (every chunk alike) in place of
      // exp(lse_c - lse) (each chunk's share of the softmax's mass).
      const float w = kM == DecodeMistake::MergeAverage ? 1.0f / used : expf(lc - row_lse);
      acc = fmaf(w, part_o[(c * rows + row) * D + d], acc);
    }
    o[row * D + d] = __float2bfloat16_rn(acc);
  }
  lse[row] = row_lse;
}

template <DecodeMistake kM>
void decode_run(const bf16* q, const bf16* kc, const bf16* vc, const int* seq_lens, bf16* o, float* lse, int B, int Hq,
                int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  require_groups("broken decode", Hq, Hkv);
  const int chunks = decode_splits(B, Hkv, L_max);
  const int chunk = (L_max + chunks - 1) / chunks;
  const long long rows = static_cast<long long>(B) * Hq;
  float* part_o = static_cast<float*>(scratch);
  float* part_lse = part_o + static_cast<size_t>(chunks) * rows * D;
  const unsigned blocks = static_cast<unsigned>((rows + kRowThreads - 1) / kRowThreads);
  decode_chunks<kM><<<dim3(blocks, chunks), kRowThreads, 0, stream>>>(q, kc, vc, seq_lens, part_o, part_lse, B, Hq, Hkv,
                                                                      L_max, D, chunk, scale);
  WB_CHECK_LAUNCH();
  decode_merge<kM><<<blocks, kRowThreads, 0, stream>>>(part_o, part_lse, o, lse, rows, chunks, D);
  WB_CHECK_LAUNCH();
}

}  // namespace

void ragged_reads_next(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const int* cu_seqlens, int B,
                       int T, int Hq, int Hkv, int max_seqlen, int D, float scale, bool causal, void*,
                       cudaStream_t stream) {
  (void)max_seqlen;
  require_groups("ragged_reads_next", Hq, Hkv);
  const long long rows = static_cast<long long>(T) * Hq;
  if (rows == 0) return;
  ragged_rows<<<static_cast<unsigned>((rows + kRowThreads - 1) / kRowThreads), kRowThreads, 0, stream>>>(
      q, k, v, o, lse, cu_seqlens, B, T, Hq, Hkv, D, scale, causal);
  WB_CHECK_LAUNCH();
}

void gqa_wrong_head(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int Hq, int Hkv, int Sq,
                    int Sk, int D, float scale, bool causal, void*, cudaStream_t stream) {
  require_groups("gqa_wrong_head", Hq, Hkv);
  const long long rows = static_cast<long long>(B) * Hq * Sq;
  gqa_rows<<<static_cast<unsigned>((rows + kRowThreads - 1) / kRowThreads), kRowThreads, 0, stream>>>(
      q, k, v, o, lse, B, Hq, Hkv, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

void decode_merge_average(const bf16* q, const bf16* kc, const bf16* vc, const int* seq_lens, bf16* o, float* lse,
                          int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode_run<DecodeMistake::MergeAverage>(q, kc, vc, seq_lens, o, lse, B, Hq, Hkv, L_max, D, scale, scratch, stream);
}

void decode_drops_last(const bf16* q, const bf16* kc, const bf16* vc, const int* seq_lens, bf16* o, float* lse, int B,
                       int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode_run<DecodeMistake::DropsLast>(q, kc, vc, seq_lens, o, lse, B, Hq, Hkv, L_max, D, scale, scratch, stream);
}

WB_VARIANTS(ch08_broken_part2, wb::Role::Broken) {
  using wb::Code;
  const auto decode_scratch = [](const wb::Shape& s) {
    return decode_scratch_bytes(static_cast<int>(s["B"]), static_cast<int>(s["Hq"]), static_cast<int>(s["Hkv"]),
                                static_cast<int>(s["Lmax"]), static_cast<int>(s["D"]));
  };
  // Small shapes only: these kernels take a thread per row and a key at a time.
  const auto ragged_shape = [](int64_t mix, int64_t causal) {
    int64_t T = 0, longest = 0, B = 0;
    for (int64_t n :
         mix == 2 ? std::vector<int64_t>{65, 1, 64, 63} : std::vector<int64_t>{17, 129, 1000, 2, 64, 65, 127, 300}) {
      T += n;
      longest = std::max(longest, n);
      ++B;
    }
    return wb::Shape{{"B", B},   {"B1", B + 1}, {"T", T},           {"maxlen", longest}, {"Hq", 3},
                     {"Hkv", 3}, {"D", 32},     {"causal", causal}, {"mix", mix}};
  };
  const auto gqa = [](int64_t Hq, int64_t Hkv, int64_t S, int64_t causal) {
    return wb::Shape{{"B", 1}, {"Hq", Hq}, {"Hkv", Hkv}, {"Sq", S}, {"Sk", S}, {"D", 64}, {"causal", causal}};
  };
  const auto decode = [](int64_t B, int64_t Hq, int64_t Hkv, int64_t L, int64_t mix) {
    return wb::Shape{{"B", B}, {"Hq", Hq}, {"Hkv", Hkv}, {"Lmax", L}, {"D", 64}, {"mix", mix}};
  };
  return {
      wb::variant("attention_ragged/bf16", "ragged_reads_next", &ragged_reads_next)
          .on({ragged_shape(2, 0), ragged_shape(3, 0), ragged_shape(3, 1)})
          .rejected_as({Code::Wrong},
                       "the last key tile of a sequence masked at the end of the batch, not of the "
                       "sequence: it reads the next sequence's tokens"),
      wb::variant("attention_gqa/bf16", "gqa_wrong_head", &gqa_wrong_head)
          .on({gqa(12, 12, 17, 1), gqa(32, 8, 17, 0), gqa(32, 8, 65, 1)})
          .rejected_as({Code::Wrong}, "query head hq reads kv head hq % Hkv (right only when Hq = Hkv)"),
      wb::variant("attention_decode/bf16", "decode_merge_average", &decode_merge_average)
          .with_workspace(decode_scratch)
          .on({decode(1, 4, 4, 17, 0), decode(2, 8, 2, 300, 1), decode(1, 32, 8, 4096, 0)})
          .rejected_as({Code::Wrong}, "split-KV chunks averaged instead of weighted by exp(lse_c - lse)"),
      wb::variant("attention_decode/bf16", "decode_drops_last", &decode_drops_last)
          .with_workspace(decode_scratch)
          .on({decode(1, 4, 4, 17, 0), decode(2, 8, 2, 300, 1), decode(1, 12, 12, 1, 0)})
          .rejected_as({Code::Wrong, Code::NaN}, "the newest cache entry (j = L_b - 1, the token itself) left out"),
  };
}

}  // namespace ch08::broken

// ===========================================================================================
// Part 3: the attention of part 1 (attention/f32, attention/bf16) as a thread per query row
// running the online softmax one key at a time, with one mistake each:
//
//   launcher                  mistake                                       caught by
//   max_from_zero             the running max starts at 0, not -inf: a      the far_below inputs
//                             row whose scores all lie below about -88      (every score near
//                             has every exp(s - 0) underflow to 0, and      -100 ... -230): o = 0,
//                             is answered as a row that sees no key         lse = -inf (Wrong)
//   int_offsets_bf16          every offset ((b H + h) S + j) D + d in int   the large case: keys
//                                                                           past element 2^31

namespace ch08::broken {

AttentionF32Fn max_from_zero;
AttentionBf16Fn int_offsets_bf16;

namespace {

enum class RowMistake { MaxFromZero, IntOffsets };

// grid (ceil(B H Sq / 64)), a thread per query row.
template <class T, RowMistake kM>
__global__ void attention_rows(const T* q, const T* k, const T* v, T* o, float* lse, int B, int H, int Sq, int Sk,
                               int D, float scale, bool causal) {
  const long long row = static_cast<long long>(blockIdx.x) * 64 + threadIdx.x;
  if (row >= static_cast<long long>(B) * H * Sq) return;
  const long long bh = row / Sq;
  const int i = static_cast<int>(row % Sq);
  const int visible = causal ? max(0, min(Sk, i + Sk - Sq + 1)) : Sk;
  float acc[kMaxD];
  for (int d = 0; d < D; ++d) acc[d] = 0.0f;
  float m = kM == RowMistake::MaxFromZero ? 0.0f : -INFINITY, l = 0.0f;  // MaxFromZero: should be -INFINITY
  for (int j = 0; j < visible; ++j) {
    size_t at;
    if constexpr (kM == RowMistake::IntOffsets) {
      const int ibh = static_cast<int>(bh);
      at = static_cast<size_t>((ibh * Sk + j) * D);  // should be (size_t(bh) * Sk + j) * D: wraps past 2^31
    } else {
      at = (static_cast<size_t>(bh) * Sk + j) * D;
    }
    float dot = 0.0f;
    for (int d = 0; d < D; ++d) dot = fmaf(wb::to_float(q[row * D + d]), wb::to_float(k[at + d]), dot);
    const float s = dot * scale;
    if (s > m) {
      const float alpha = expf(m - s);
      l *= alpha;
      for (int d = 0; d < D; ++d) acc[d] *= alpha;
      m = s;
    }
    const float p = expf(s - m);
    l += p;
    for (int d = 0; d < D; ++d) acc[d] = fmaf(p, wb::to_float(v[at + d]), acc[d]);
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int d = 0; d < D; ++d) o[row * D + d] = wb::from_float<T>(acc[d] * inv);
  lse[row] = l > 0.0f ? m + logf(l) : -INFINITY;
}

template <class T, RowMistake kM>
void attention_rows_run(const T* q, const T* k, const T* v, T* o, float* lse, int B, int H, int Sq, int Sk, int D,
                        float scale, bool causal, cudaStream_t stream) {
  const long long rows = static_cast<long long>(B) * H * Sq;
  if (rows == 0) return;
  attention_rows<T, kM>
      <<<static_cast<unsigned>((rows + 63) / 64), 64, 0, stream>>>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace

void max_from_zero(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq, int Sk,
                   int D, float scale, bool causal, void*, cudaStream_t stream) {
  attention_rows_run<float, RowMistake::MaxFromZero>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

void int_offsets_bf16(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H, int Sq, int Sk,
                      int D, float scale, bool causal, void*, cudaStream_t stream) {
  attention_rows_run<bf16, RowMistake::IntOffsets>(q, k, v, o, lse, B, H, Sq, Sk, D, scale, causal, stream);
}

WB_VARIANTS(ch08_broken_part3, wb::Role::Broken) {
  using wb::Code;
  const auto attn = [](int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t causal) {
    return wb::Shape{{"B", B}, {"H", H}, {"Sq", Sq}, {"Sk", Sk}, {"D", D}, {"causal", causal}};
  };
  return {
      // Right on every shape with ordinary scores (a shift by 0 is as good as any while the
      // exps stay finite and nonzero); the far_below inputs are not.
      wb::variant("attention/f32", "max_from_zero", &max_from_zero)
          .on({attn(1, 2, 17, 17, 64, 1), attn(1, 2, 129, 17, 64, 1)})
          .rejected_as({Code::Wrong, Code::NaN}, "the running max started at 0 instead of -inf"),
      // Right below 2^31 elements per tensor; the large case's keys and values reach past it.
      wb::variant("attention/bf16", "int_offsets", &int_offsets_bf16)
          .on({attn(1, 2, 17, 129, 64, 0)})
          .rejected_as({Code::Fault, Code::OobRead, Code::OobWrite, Code::Wrong, Code::NaN, Code::Unwritten},
                       "the key offset ((b H + h) Sk + j) D computed in int"),
  };
}

}  // namespace ch08::broken
