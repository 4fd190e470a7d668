// v5 — decode attention against a KV cache, split over the keys (flash-decoding).
//
// What changes over v4: the shape. A decode step has ONE query per sequence, so v4's grid
// (query tiles x heads) is B * H blocks of one row each: at batch 1, 32 heads, a 132-SM GPU
// runs 32 blocks, and each of them reads its whole cache alone. Decode is a pure read of the
// cache (every key and value is used once, by G query heads), so the speed limit is DRAM
// bandwidth, and reaching it takes every SM. The keys are therefore cut into chunks, and
//
//   kernel 1   grid (chunks, B * Hkv): a CTA takes one chunk of one kv head of one sequence,
//              and all G = Hq / Hkv query heads that share that kv head (the K and V it loads
//              serve G heads at once: grouped heads cost 1 / G of the bytes). It runs the
//              online softmax over its keys and writes a PARTIAL result for each head: the
//              normalised o_c and lse_c = log sum_{j in chunk} exp(s_j), FP32, to scratch.
//   kernel 2   grid (B * Hq): merges the chunks of a head by their log-sum-exp (decode_merge.cuh):
//                lse = log sum_c exp(lse_c)      o = sum_c exp(lse_c - lse) o_c
//              (exp(lse_c - lse) is the share of the softmax's mass that chunk c holds; an
//              empty chunk has lse_c = -inf and weight 0).
//
//     keys of sequence b, L_b = 300, chunks of 128:      (each chunk: one CTA per kv head)
//     | chunk 0: keys 0..127 | chunk 1: 128..255 | chunk 2: 256..299 | chunk 3: empty |
//          (o_0, lse_0)           (o_1, lse_1)        (o_2, lse_2)       (0, -inf)
//            \___________________________|___________________/_______________/
//                                 merge: weights exp(lse_c - lse)
//
// How many chunks: decode_splits (ch08.cuh) aims at about kDecodeTargetCtas CTAs in all, at
// least one tile of 64 keys per chunk; the chunks are cut from L_max (the grid is the same
// for every sequence), so a shorter sequence's last chunks are empty and cost a CTA that
// returns after writing (0, -inf).
//
// Inside a CTA (4 warps), per tile of 64 keys, double-buffered through cp.async:
//   scores    s[g][j] = q_g . k_j for the G x 64 pairs, a thread per pair (16-byte reads of k
//             from shared memory; q pre-multiplied by scale log2 e, so s is in base-2 units)
//   softmax   a warp per query head: the tile's max, m_new, alpha = exp2(m_old - m_new),
//             p = exp2(s - m_new) written over s, l = alpha l + sum p
//   o update  o[g][d] = alpha o[g][d] + sum_j p[g][j] v[j][d], a thread per (g, 2 d)
// The arithmetic is on CUDA cores: at G = 4 a key costs 4 D multiply-adds per product for
// 4 D bytes of cache, far below what the SM can do per byte of DRAM; tensor cores pay off
// only for large groups (MQA, G = 32) — a step this version leaves out.
//
// A second launcher, v5_decode_at_pos_bf16, runs the same kernels on a position counter
// instead of lengths (L_b = pos[b] + 1): a model's decode step keeps the counter on the device
// and replays one CUDA Graph for every step (chapter 9's fused decode step uses it).
//
// Run: build/ch08/bin/ch08_bench --op=attention_decode --impl=v5_split_kv_decode,cublas_decode
#include <cstdint>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/reduce.cuh"
#include "decode_merge.cuh"
#include "ladder.cuh"

namespace ch08::solution {
namespace {

using namespace wb::ptx;  // cp.async (harness/device/async_copy.cuh)

constexpr int kMaxGroup = 64;  // query heads per kv head this version takes (shared memory)

template <int kD_>
struct DecodeCfg {
  static constexpr int kD = kD_;                  // head size, padded to 32, 64, 96 or 128
  static constexpr int kBc = kDecodeKeysPerTile;  // keys per tile
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kPitch = kD + 8;  // BF16 row pitch of the K and V tiles (16 bytes padding)
  static constexpr int kTileElems = kBc * kPitch;
  static constexpr int kKVBytes = 4 * kTileElems * static_cast<int>(sizeof(bf16));  // 2 stages x (K, V)
  static_assert(kD % 32 == 0 && kD <= 128, "head sizes 32, 64, 96, 128");
  static_assert(kBc % 32 == 0, "a warp's lanes take kBc / 32 scores of a row each");
  static_assert((kBc * kD / 8) % kThreads == 0, "every thread copies the same number of 16-byte pieces");
  static_assert((kPitch * sizeof(bf16)) % 16 == 0, "tile rows 16-byte aligned for cp.async and uint4 reads");
  // Floats after the K and V stages: q (G x kD), o (G x kD), s (G x kBc), m, l, alpha (G each).
  static constexpr size_t smem_bytes(int G) { return kKVBytes + sizeof(float) * G * (2 * kD + kBc + 3); }
};

// Rows row0 .. row0 + kBc - 1 of a cache (rows < end only; zeros elsewhere and past D).
template <class Cfg>
__device__ __forceinline__ void load_keys(bf16* dst, const bf16* src, int row0, int end, int D) {
  constexpr int kPerRow = Cfg::kD / 8, kPieces = Cfg::kBc * kPerRow;
#pragma unroll
  for (int n = 0; n < kPieces / Cfg::kThreads; ++n) {
    const int c = threadIdx.x + n * Cfg::kThreads, r = c / kPerRow, p = c % kPerRow;
    const bool in = row0 + r < end && p * 8 < D;
    cp_async_16(dst + r * Cfg::kPitch + p * 8, in ? src + static_cast<size_t>(row0 + r) * D + p * 8 : src, in);
  }
}

// grid (chunks, B * Hkv), Cfg::kThreads threads, Cfg::smem_bytes(G) bytes of shared memory.
// Writes part_o[c][b * Hq + hq][0..D) and part_lse[c][b * Hq + hq] for its chunk c.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads)
    decode_chunk_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache, const bf16* __restrict__ v_cache,
                        const int* __restrict__ seq_lens, int len_add, float* __restrict__ part_o,
                        float* __restrict__ part_lse, int Hkv, int G, int L_max, int D, int chunk, float scale_log2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kD = Cfg::kD, kBc = Cfg::kBc, kP = Cfg::kPitch, kT = Cfg::kThreads;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);                    // 2 x (kBc, kP)
  bf16* sV = sK + 2 * Cfg::kTileElems;                             // 2 x (kBc, kP)
  float* sQ = reinterpret_cast<float*>(smem_raw + Cfg::kKVBytes);  // (G, kD), times scale log2 e
  float* sO = sQ + G * kD;                                         // (G, kD) running output
  float* sS = sO + G * kD;                                         // (G, kBc) scores, then probabilities
  float* sM = sS + G * kBc;                                        // (G) running max, base-2 units
  float* sL = sM + G;                                              // (G) running sum
  float* sA = sL + G;                                              // (G) this tile's rescale factor

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const size_t bkv = blockIdx.y;  // b * Hkv + hkv; its query heads are bkv * G .. bkv * G + G - 1
  const int b = static_cast<int>(bkv / Hkv);
  const int L = min(seq_lens[b] + len_add, L_max);  // keys 0 .. L - 1, the new token's included
  const int k_begin = blockIdx.x * chunk, k_end = min(k_begin + chunk, L);
  const int tiles = k_end > k_begin ? (k_end - k_begin + kBc - 1) / kBc : 0;
  const bf16* kh = k_cache + bkv * L_max * D;
  const bf16* vh = v_cache + bkv * L_max * D;
  const size_t rows = static_cast<size_t>(gridDim.y) * G;  // B * Hq: one partial row per query head
  const size_t row0 = bkv * G;

  if (tiles > 0) {
    load_keys<Cfg>(sK, kh, k_begin, k_end, D);
    load_keys<Cfg>(sV, vh, k_begin, k_end, D);
    cp_async_commit();
  }
  for (int e = threadIdx.x; e < G * kD; e += kT) {
    const int g = e / kD, d = e % kD;
    sQ[e] = d < D ? __bfloat162float(q[(row0 + g) * D + d]) * scale_log2 : 0.0f;
    sO[e] = 0.0f;
  }
  for (int g = threadIdx.x; g < G; g += kT) {
    sM[g] = -INFINITY;
    sL[g] = 0.0f;
  }

  for (int t = 0; t < tiles; ++t) {
    const int kv0 = k_begin + t * kBc;
    const bf16* sKt = sK + (t % 2) * Cfg::kTileElems;
    const bf16* sVt = sV + (t % 2) * Cfg::kTileElems;
    // Tile t + 1 into the other stage: it held tile t - 1, which every thread finished before
    // the last barrier of the previous iteration.
    if (t + 1 < tiles) {
      load_keys<Cfg>(sK + ((t + 1) % 2) * Cfg::kTileElems, kh, kv0 + kBc, k_end, D);
      load_keys<Cfg>(sV + ((t + 1) % 2) * Cfg::kTileElems, vh, kv0 + kBc, k_end, D);
      cp_async_commit();
      cp_async_wait<1>();  // tile t has landed (t + 1 may still be on its way)
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // ... for every thread's copies; q, o, m, l initialised (t = 0)

    // --- scores: s[g][j] = q_g . k_j (base 2), -inf past the chunk's last key ---------------------
    for (int e = threadIdx.x; e < G * kBc; e += kT) {
      const int g = e / kBc, j = e % kBc;
      const float* qg = sQ + g * kD;
      const bf16* kj = sKt + j * kP;
      float dot = 0.0f;
#pragma unroll
      for (int d = 0; d < kD; d += 8) {
        const uint4 raw = *reinterpret_cast<const uint4*>(kj + d);  // 8 BF16 of key j
        const __nv_bfloat162* k2 = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          const float2 kf = __bfloat1622float2(k2[h]);
          dot = fmaf(qg[d + 2 * h], kf.x, dot);
          dot = fmaf(qg[d + 2 * h + 1], kf.y, dot);
        }
      }
      sS[e] = kv0 + j < k_end ? dot : -INFINITY;
    }
    __syncthreads();

    // --- online softmax: a warp per query head ----------------------------------------------------
    for (int g = warp; g < G; g += Cfg::kWarps) {
      float* sg = sS + g * kBc;
      float mx = -INFINITY;
#pragma unroll
      for (int j = lane; j < kBc; j += 32) mx = fmaxf(mx, sg[j]);
      mx = wb::warp_max(mx);
      const float m_old = sM[g], m_new = fmaxf(m_old, mx);
      const float base = m_new == -INFINITY ? 0.0f : m_new;  // nothing visible yet: no -inf - -inf
      float sum = 0.0f;
#pragma unroll
      for (int j = lane; j < kBc; j += 32) {
        const float p = exp2f(sg[j] - base);
        sg[j] = p;
        sum += p;
      }
      sum = wb::warp_sum(sum);
      __syncwarp();  // every lane has read m_old and l before lane 0 replaces them
      if (lane == 0) {
        const float alpha = exp2f(m_old - base);  // m_old = -inf: 0
        sA[g] = alpha;
        sL[g] = sL[g] * alpha + sum;
        sM[g] = m_new;
      }
    }
    __syncthreads();

    // --- o = alpha o + p V: a thread per (query head, pair of d) ------------------------------------
    for (int e = threadIdx.x; e < G * kD / 2; e += kT) {
      const int g = e / (kD / 2), d = 2 * (e % (kD / 2));
      const float* pg = sS + g * kBc;
      const float alpha = sA[g];
      float o0 = sO[g * kD + d] * alpha, o1 = sO[g * kD + d + 1] * alpha;
#pragma unroll 8
      for (int j = 0; j < kBc; ++j) {
        const float2 vf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(sVt + j * kP + d));
        o0 = fmaf(pg[j], vf.x, o0);
        o1 = fmaf(pg[j], vf.y, o1);
      }
      sO[g * kD + d] = o0;
      sO[g * kD + d + 1] = o1;
    }
    __syncthreads();  // this stage and s are free for the next tile
  }
  if (tiles == 0) __syncthreads();  // the initialisation above is visible to the writes below

  // --- the chunk's partial result: o / l and lse = m ln 2 + ln l (natural units) -----------------
  const size_t part = static_cast<size_t>(blockIdx.x) * rows + row0;
  for (int e = threadIdx.x; e < G * kD; e += kT) {
    const int g = e / kD, d = e % kD;
    if (d < D) part_o[(part + g) * D + d] = sL[g] > 0.0f ? sO[e] / sL[g] : 0.0f;
  }
  for (int g = threadIdx.x; g < G; g += kT) {
    part_lse[part + g] = sL[g] > 0.0f ? sM[g] * 0.6931471805599453f + logf(sL[g]) : -INFINITY;
  }
#else
  __trap();  // not reached: the variant needs compute capability 8.0 (cp.async)
#endif
}

// L_b = seq_lens[b] + len_add: 0 for v5_decode_bf16 (lengths), 1 for v5_decode_at_pos_bf16
// (positions: the token at seq_lens[b] is the last one).
template <class Cfg>
void launch(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, int len_add, bf16* o,
            float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  auto* kernel = &decode_chunk_kernel<Cfg>;
  // Enough for the largest group, once per configuration.
  [[maybe_unused]] static const bool raised =
      wb::allow_dynamic_smem(kernel, static_cast<int>(Cfg::smem_bytes(kMaxGroup)));
  const int G = Hq / Hkv;
  // Chunks of whole tiles, cut from L_max: `used` <= decode_splits chunks of `chunk` keys.
  const int tiles = ceil_div(L_max, Cfg::kBc);
  const int per_chunk = ceil_div(tiles, decode_splits(B, Hkv, L_max));
  const int used = ceil_div(tiles, per_chunk), chunk = per_chunk * Cfg::kBc;
  const size_t rows = static_cast<size_t>(B) * Hq;
  float* part_o = static_cast<float*>(scratch);                     // (used, B * Hq, D)
  float* part_lse = part_o + static_cast<size_t>(used) * rows * D;  // (used, B * Hq)
  const float scale_log2 = scale * 1.4426950408889634f;
  kernel<<<dim3(used, B * Hkv), Cfg::kThreads, Cfg::smem_bytes(G), stream>>>(
      q, k_cache, v_cache, seq_lens, len_add, part_o, part_lse, Hkv, G, L_max, D, chunk, scale_log2);
  WB_CHECK_LAUNCH();
  decode_merge_kernel<<<static_cast<unsigned>(rows), kDecodeMergeThreads, 0, stream>>>(part_o, part_lse, o, lse, used,
                                                                                       D);
  WB_CHECK_LAUNCH();
}

// Both launchers: the checks, then the kernels for the head size padded to 32, 64, 96 or 128.
void decode(const char* who, const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, int len_add,
            bf16* o, float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
            cudaStream_t stream) {
  check_decode_args(who, B, Hq, Hkv, L_max, D, scratch);
  if (Hq / Hkv > kMaxGroup) {
    throw std::invalid_argument(std::string(who) + ": more than " + std::to_string(kMaxGroup) +
                                " query heads per kv head");
  }
  with_padded_head(D, [&](auto kd) {
    launch<DecodeCfg<kd.value>>(q, k_cache, v_cache, seq_lens, len_add, o, lse, B, Hq, Hkv, L_max, D, scale, scratch,
                                stream);
  });
}

}  // namespace

void v5_decode_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, bf16* o, float* lse,
                    int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode("v5_split_kv_decode", q, k_cache, v_cache, seq_lens, 0, o, lse, B, Hq, Hkv, L_max, D, scale, scratch, stream);
}

void v5_decode_at_pos_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* pos, bf16* o, float* lse,
                           int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode("v5_split_kv_decode (at pos)", q, k_cache, v_cache, pos, 1, o, lse, B, Hq, Hkv, L_max, D, scale, scratch,
         stream);
}

}  // namespace ch08::solution
