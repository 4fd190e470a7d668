// v8 — decode attention, the grid sized from what each SM holds: v6's kernel (tensor cores, the
// merge in the last CTA of each group), with the pipeline depth and the split count chosen
// per call from the occupancy calculator, so that every SM keeps enough of the cache in flight.
//
// v6 gives every SM two CTAs of a 3-stage pipeline (104 KB of shared memory each at D = 128)
// and cuts each sequence into as many chunks as fill those slots: at batch 1 with 8 kv heads,
// 32 chunks of 4 key tiles. A CTA that streams only 4 tiles spends a large part of its life
// filling its pipeline and merging, and 32 chunks per group are 32 partial results that the
// last CTA reads back. What changes:
//
//   Little's law   the bytes an SM must have requested and not yet received to keep DRAM busy
//                  are its share of the bandwidth times the latency: on an H200 about
//                  4.2 TB/s / 132 SMs x ~1 us = 32 KB (an H100: 3.0 TB/s, ~23 KB). A 64-key
//                  tile of K and V is 32 KB at D = 128, so an SM needs at least one tile on its
//                  way at all times, and more to ride out the spread of the latency.
//   pipeline depth a template parameter: 2 stages (3 CTAs per SM at D = 128: 3 tiles in flight
//                  per SM), 3 (v6's: 2 CTAs, 4 tiles) or 6 (one CTA of 209 KB, 5 tiles: 160 KB
//                  in flight per SM). A configuration whose shared memory does not fit the GPU
//                  (an A100 holds 163 KB per CTA) is left out.
//   split count    for each depth, v6's one-wave rule with the SM slots the occupancy
//                  calculator reports (cudaOccupancyMaxActiveBlocksPerMultiprocessor), then
//                  the launcher takes the plan whose busiest SM streams the fewest tiles; on a
//                  tie, the one whose CTAs are all resident at once, then the one with more
//                  tiles in flight. Batch 1, 32/8, D 128 on 132 SMs: 6 stages, 16 chunks of 8
//                  tiles (128 CTAs) at L 8192; batch 32: 3 stages, one chunk per group, one wave.
//   merge          the same fold as v6 (a ticket per group, __threadfence before it, the last
//                  CTA merges in chunk order, the counter back to zero), with half the chunks to
//                  read at batch 1, and the partial o of 16 chunks loaded at once (one L2 round
//                  trip per 16 chunks instead of per 8). The sums run in chunk order as before,
//                  so the bits do not depend on which CTA arrives last: deterministic.
//
// The grid is still one kernel launch per call for groups of up to 4 query heads (GQA 32/8);
// larger groups keep v6's merge kernel, a programmatic dependent.
//
//   CTA (c, b * Hkv + h, z), kStages stages of K tile [64][D + 8] and V tile [64][D + 8]:
//     the key loop, the warps' merge and the chunks' merge as in v6 (v6_split_kv_mma.cu).
//
// Run: build/ch08/bin/ch08_bench --op=attention_decode --impl=v6_split_kv_mma,v8_split_kv_occupancy,cublas_decode
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/pdl.cuh"
#include "decode_merge.cuh"
#include "ladder.cuh"

namespace ch08::solution {
namespace {

using namespace wb::ptx;  // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)

constexpr int kRowsPerCta = 16;   // query heads of a group per CTA: the M of one mma tile
constexpr int kFoldRows = 4;      // the most rows per CTA whose merge the last CTA does (launch)
constexpr int kMergeUnroll = 16;  // chunks whose partial o the last CTA loads at once (one L2 round trip each)

template <int kD_, int kStages_>
struct MmaDecodeCfg {
  static constexpr int kD = kD_;                  // head size, padded to 32, 64, 96 or 128
  static constexpr int kBc = kDecodeKeysPerTile;  // keys per tile (64)
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kKeysPerWarp = kBc / kWarps;  // 16: one k16 step of P V
  static constexpr int kStages = kStages_;           // tiles in shared memory: kStages - 1 in flight while one is used
  static_assert(kStages >= 2, "at least one tile in flight while another is used");
  static constexpr int kPitch = kD + 8;  // BF16 row pitch: 8 ldmatrix rows fall in 8 different bank groups
  static constexpr int kTileElems = kBc * kPitch;
  static constexpr int kKSteps = kD / 16;  // k16 steps of Q K^T
  static constexpr int kOTiles = kD / 8;   // n8 tiles of O
  static constexpr int kOPitch = kD + 4;   // FP32 row pitch of the warps' outputs in the final merge
  static_assert(kD % 32 == 0 && kD <= 128, "head sizes 32, 64, 96, 128");
  static_assert(kKeysPerWarp == 16, "a warp's keys are one k16 step of P V and one ldmatrix.x4 of K");
  static_assert((kBc * kD / 8) % kThreads == 0, "every thread copies the same number of 16-byte pieces");
  static constexpr size_t kPipeBytes = size_t(kStages) * 2 * kTileElems * sizeof(bf16);
  static constexpr size_t kMergeBytes = sizeof(float) * kWarps * kRowsPerCta * (kOPitch + 2);
  static constexpr size_t kChunkMergeBytes = sizeof(float) * kFoldRows * (kDecodeTargetCtas + 1);  // chunk weights, lse
  static constexpr size_t kSmemBytes = std::max({kPipeBytes, kMergeBytes, kChunkMergeBytes});
  // CTAs per SM the registers must allow (__launch_bounds__): as many as shared memory allows
  // on an H100 (227 KB for a CTA's dynamic shared memory, 1 KB reserved per CTA), at most
  // kRegCap (the key loop's registers: 3 CTAs of 128 threads leave 170 a thread at D = 128).
  static constexpr int kRegCap = kD <= 32 ? 6 : kD <= 64 ? 4 : 3;
  static constexpr int kSmemCtas = static_cast<int>((227 * 1024) / (kSmemBytes + 1024));
  static constexpr int kMinCtas = kSmemCtas < 1 ? 1 : kSmemCtas < kRegCap ? kSmemCtas : kRegCap;
};

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x (lo) in the low 16 bits
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Rows row0 .. row0 + kBc - 1 of one head's cache into a tile (rows < end only; zeros
// elsewhere and past D, so that masked keys hold finite values).
template <class Cfg>
__device__ __forceinline__ void load_tile(bf16* dst, const bf16* src, int row0, int end, int D) {
  constexpr int kPerRow = Cfg::kD / 8, kPieces = Cfg::kBc * kPerRow;
#pragma unroll
  for (int n = 0; n < kPieces / Cfg::kThreads; ++n) {
    const int c = threadIdx.x + n * Cfg::kThreads, r = c / kPerRow, p = c % kPerRow;
    const bool in = row0 + r < end && p * 8 < D;
    cp_async_16(dst + r * Cfg::kPitch + p * 8, in ? src + static_cast<size_t>(row0 + r) * D + p * 8 : src, in);
  }
}

// grid (chunks, B * Hkv, ceil(G / 16)), Cfg::kThreads threads, Cfg::kSmemBytes of shared memory.
// Writes part_o[c][row][0..D) and part_lse[c][row] for its chunk c and its (up to 16) rows;
// the last CTA of the group (blockIdx.y, blockIdx.z) to finish merges the group's chunks into
// o and lse. tickets: one counter per group, zero between launches (several chunks only); null:
// no merge here, decode_merge_kernel follows.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinCtas)
    mma_chunk_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k_cache, const bf16* __restrict__ v_cache,
                     const int* __restrict__ seq_lens, int len_add, float* part_o, float* part_lse,
                     unsigned int* __restrict__ tickets, bf16* __restrict__ o, float* __restrict__ lse, int Hkv, int G,
                     int L_max, int D, int chunk, float scale_log2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ bool last_cta;  // this CTA took the group's last ticket
  constexpr int kD = Cfg::kD, kBc = Cfg::kBc, kP = Cfg::kPitch, kS = Cfg::kStages;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);  // kS x (kBc, kP)
  bf16* sV = sK + kS * Cfg::kTileElems;          // kS x (kBc, kP)

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, qd = lane % 4;  // the mma layouts' row (g, g + 8) and column pair (2 qd) of a lane
  const size_t bkv = blockIdx.y;          // b * Hkv + hkv
  const int b = static_cast<int>(bkv / Hkv);
  const int r0 = blockIdx.z * kRowsPerCta;                       // first row of the group this CTA takes
  const int rows = G - r0 < kRowsPerCta ? G - r0 : kRowsPerCta;  // 1 .. 16
  const bf16* kh = k_cache + bkv * L_max * D;
  const bf16* vh = v_cache + bkv * L_max * D;
  const int k_begin = blockIdx.x * chunk;

  // Before the wait (a PdlChain): the first tiles' K and V rows into L2. The length is not
  // read yet (an earlier kernel may write it), so the bound is L_max.
  {
    const int k_stop = min(min(k_begin + chunk, L_max), k_begin + (kS - 1) * kBc);
    const long long bytes = k_stop > k_begin ? static_cast<long long>(k_stop - k_begin) * D * sizeof(bf16) : 0;
    const char* kp = reinterpret_cast<const char*>(kh + static_cast<size_t>(k_begin) * D);
    const char* vp = reinterpret_cast<const char*>(vh + static_cast<size_t>(k_begin) * D);
    for (long long off = threadIdx.x * 128LL; off < bytes; off += 128LL * Cfg::kThreads) {
      wb::pdl_prefetch_l2(kp + off);
      wb::pdl_prefetch_l2(vp + off);
    }
  }
  wb::pdl_wait();  // q, the cache's newest entry and the length are the previous kernels' outputs

  const int L = min(seq_lens[b] + len_add, L_max);  // keys 0 .. L - 1, the new token's included
  const int k_end = min(k_begin + chunk, L);
  const int tiles = k_end > k_begin ? (k_end - k_begin + kBc - 1) / kBc : 0;

  // The pipeline's first kS - 1 tiles (a group committed per tile, empty or not: the counting
  // in the loop stays the same).
#pragma unroll
  for (int s = 0; s < kS - 1; ++s) {
    if (s < tiles) {
      load_tile<Cfg>(sK + s * Cfg::kTileElems, kh, k_begin + s * kBc, k_end, D);
      load_tile<Cfg>(sV + s * Cfg::kTileElems, vh, k_begin + s * kBc, k_end, D);
    }
    cp_async_commit();
  }

  // Q as A fragments, straight from global memory: rows r0 + g and r0 + g + 8 of the group
  // (zeros past `rows`), columns 16 kk + 2 qd (+ 1, + 8, + 9), zeros past D.
  uint32_t qf[Cfg::kKSteps][4];
  {
    const bf16* q_lo = q + (bkv * G + r0 + g) * D;
    const bf16* q_hi = q_lo + 8 * D;
    const auto pair = [&](const bf16* row, bool ok, int col) -> uint32_t {
      return ok && col < D ? *reinterpret_cast<const uint32_t*>(row + col) : 0u;
    };
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
      const int col = kk * 16 + 2 * qd;
      qf[kk][0] = pair(q_lo, g < rows, col);
      qf[kk][1] = pair(q_hi, g + 8 < rows, col);
      qf[kk][2] = pair(q_lo, g < rows, col + 8);
      qf[kk][3] = pair(q_hi, g + 8 < rows, col + 8);
    }
  }

  float acc_o[Cfg::kOTiles][4];
#pragma unroll
  for (int j = 0; j < Cfg::kOTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[j][e] = 0.0f;
  float m_lo = -INFINITY, m_hi = -INFINITY;  // running max of rows g, g + 8 (base-2 units)
  float l_lo = 0.0f, l_hi = 0.0f;            // this lane's share of the running sums

  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<kS - 2>();  // tile t has landed (the later ones may still be on their way)
    __syncthreads();          // ... for every thread's copies; and tile t - 1's stage is free
    if (t + kS - 1 < tiles) {
      const int st = (t + kS - 1) % kS, row0 = k_begin + (t + kS - 1) * kBc;
      load_tile<Cfg>(sK + st * Cfg::kTileElems, kh, row0, k_end, D);
      load_tile<Cfg>(sV + st * Cfg::kTileElems, vh, row0, k_end, D);
    }
    cp_async_commit();

    const bf16* sKt = sK + (t % kS) * Cfg::kTileElems + warp * 16 * kP;  // this warp's 16 keys
    const bf16* sVt = sV + (t % kS) * Cfg::kTileElems + warp * 16 * kP;
    const int key0 = k_begin + t * kBc + warp * 16;  // the first of them

    // --- S = Q K^T: 16 rows x 16 keys (accumulator tiles: keys 0-7, 8-15) -----------------------
    float acc_s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
      uint32_t kb[4];
      const int key = (lane % 8) + (lane / 16) * 8, col = kk * 16 + ((lane / 8) % 2) * 8;
      ldmatrix_x4(kb, smem_u32(sKt + key * kP + col));
      mma_16816<bf16>(acc_s[0], qf[kk], kb[0], kb[1]);
      mma_16816<bf16>(acc_s[1], qf[kk], kb[2], kb[3]);
    }

    // --- base-2 units; keys past the chunk's end (or the sequence's) masked --------------------
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int key = key0 + j * 8 + 2 * qd;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc_s[j][e] = key + (e % 2) < k_end ? acc_s[j][e] * scale_log2 : -INFINITY;
      }
    }

    // --- online softmax over the warp's keys, two rows per lane -----------------------------------
    float mx_lo = m_lo, mx_hi = m_hi;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      mx_lo = fmaxf(mx_lo, fmaxf(acc_s[j][0], acc_s[j][1]));
      mx_hi = fmaxf(mx_hi, fmaxf(acc_s[j][2], acc_s[j][3]));
    }
#pragma unroll
    for (int o2 = 1; o2 <= 2; o2 *= 2) {  // the quad: lanes 4g .. 4g + 3
      mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xFFFFFFFFu, mx_lo, o2));
      mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xFFFFFFFFu, mx_hi, o2));
    }
    const float base_lo = mx_lo == -INFINITY ? 0.0f : mx_lo;  // nothing visible yet: no -inf - -inf
    const float base_hi = mx_hi == -INFINITY ? 0.0f : mx_hi;
    const float alpha_lo = exp2f(m_lo - base_lo), alpha_hi = exp2f(m_hi - base_hi);  // m = -inf: 0
    m_lo = mx_lo;
    m_hi = mx_hi;
    l_lo *= alpha_lo;
    l_hi *= alpha_hi;
#pragma unroll
    for (int j = 0; j < Cfg::kOTiles; ++j) {
      acc_o[j][0] *= alpha_lo;
      acc_o[j][1] *= alpha_lo;
      acc_o[j][2] *= alpha_hi;
      acc_o[j][3] *= alpha_hi;
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      acc_s[j][0] = exp2f(acc_s[j][0] - base_lo);
      acc_s[j][1] = exp2f(acc_s[j][1] - base_lo);
      acc_s[j][2] = exp2f(acc_s[j][2] - base_hi);
      acc_s[j][3] = exp2f(acc_s[j][3] - base_hi);
      l_lo += acc_s[j][0] + acc_s[j][1];
      l_hi += acc_s[j][2] + acc_s[j][3];
    }

    // --- O += P V: P as the A fragment (row g / g + 8, keys 2 qd.. and 8 + 2 qd..) ------------------
    const uint32_t pf[4] = {pack_bf16(acc_s[0][0], acc_s[0][1]), pack_bf16(acc_s[0][2], acc_s[0][3]),
                            pack_bf16(acc_s[1][0], acc_s[1][1]), pack_bf16(acc_s[1][2], acc_s[1][3])};
#pragma unroll
    for (int dp = 0; dp < kD / 16; ++dp) {  // d 16 dp .. 16 dp + 15: accumulator tiles 2 dp, 2 dp + 1
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, smem_u32(sVt + (lane % 16) * kP + dp * 16 + (lane / 16) * 8));
      mma_16816<bf16>(acc_o[2 * dp], pf, vb[0], vb[1]);
      mma_16816<bf16>(acc_o[2 * dp + 1], pf, vb[2], vb[3]);
    }
  }
  // The next kernel on the stream may be scheduled now (the merge kernel where there is one, or
  // in a PdlChain the chain's next kernel): it waits for this whole grid to end, the last CTAs'
  // merges included.
  wb::pdl_trigger();

  // --- the four warps' (m, l, O) merged through shared memory ---------------------------------------
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the pipeline's stages: they become the merge's space
  float* sO = reinterpret_cast<float*>(smem_raw);             // (kWarps, 16, kOPitch)
  float* sM = sO + Cfg::kWarps * kRowsPerCta * Cfg::kOPitch;  // (kWarps, 16)
  float* sL = sM + Cfg::kWarps * kRowsPerCta;                 // (kWarps, 16)
#pragma unroll
  for (int o2 = 1; o2 <= 2; o2 *= 2) {  // the lane shares of the sums, added over the quad
    l_lo += __shfl_xor_sync(0xFFFFFFFFu, l_lo, o2);
    l_hi += __shfl_xor_sync(0xFFFFFFFFu, l_hi, o2);
  }
  if (qd == 0) {
    sM[warp * kRowsPerCta + g] = m_lo;
    sM[warp * kRowsPerCta + g + 8] = m_hi;
    sL[warp * kRowsPerCta + g] = l_lo;
    sL[warp * kRowsPerCta + g + 8] = l_hi;
  }
  float* oW = sO + warp * kRowsPerCta * Cfg::kOPitch;
#pragma unroll
  for (int j = 0; j < Cfg::kOTiles; ++j) {
    const int col = j * 8 + 2 * qd;
    oW[g * Cfg::kOPitch + col] = acc_o[j][0];
    oW[g * Cfg::kOPitch + col + 1] = acc_o[j][1];
    oW[(g + 8) * Cfg::kOPitch + col] = acc_o[j][2];
    oW[(g + 8) * Cfg::kOPitch + col + 1] = acc_o[j][3];
  }
  __syncthreads();

  const size_t all_rows = static_cast<size_t>(gridDim.y) * G;  // B * Hq
  const size_t part = static_cast<size_t>(blockIdx.x) * all_rows + bkv * G + r0;
  for (int e = threadIdx.x; e < rows * kD; e += Cfg::kThreads) {
    const int r = e / kD, d = e % kD;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < Cfg::kWarps; ++w) M = fmaxf(M, sM[w * kRowsPerCta + r]);
    float sum = 0.0f, od = 0.0f;
    if (M != -INFINITY) {
#pragma unroll
      for (int w = 0; w < Cfg::kWarps; ++w) {
        const float wt = exp2f(sM[w * kRowsPerCta + r] - M);  // a warp that saw no key: 0
        sum += wt * sL[w * kRowsPerCta + r];
        od += wt * sO[(w * kRowsPerCta + r) * Cfg::kOPitch + d];
      }
    }
    if (d < D) part_o[(part + r) * D + d] = sum > 0.0f ? od / sum : 0.0f;
    // lse_c in natural units: ln(sum_j e^{s_j scale}) = (M + log2(sum)) ln 2
    if (d == 0) part_lse[part + r] = sum > 0.0f ? (M + log2f(sum)) * 0.6931471805599453f : -INFINITY;
  }

  // --- the group's chunks merged by the last of its CTAs (chapter 9's argmax does the same) --------
  if (tickets == nullptr) return;  // the merge kernel follows (launch: groups of more than kFoldRows rows)
  __syncthreads();                 // every thread's partial results written (and every thread done with sO, sM, sL)
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) {
      last_cta = true;  // one chunk: nothing to wait for, and no counter (decode_counter_bytes)
    } else {
      unsigned int* ticket = tickets + blockIdx.y * gridDim.z + blockIdx.z;
      __threadfence();  // the CTA's partial results (ordered by the barrier) are visible before its ticket
      last_cta = atomicAdd(ticket, 1u) == gridDim.x - 1;
      if (last_cta) {
        *ticket = 0;      // every chunk has taken its ticket: zero for the next launch or graph replay
        __threadfence();  // ... and every other CTA's partial results are visible to this one
      }
    }
  }
  __syncthreads();
  if (!last_cta) return;  // the same answer for the whole CTA
  // Step 1 (decode_merge.cuh): warp w takes row w of the CTA's (at most kFoldRows = 4), as the
  // merge kernel's 128 threads would: its lse, and its chunks' weights into shared memory.
  float* weights = reinterpret_cast<float*>(smem_raw);       // (kFoldRows, kDecodeTargetCtas)
  float* row_lse = weights + kFoldRows * kDecodeTargetCtas;  // (kFoldRows)
  const size_t row0 = bkv * G + r0;                          // the CTA's first row of the B * Hq
  for (int r = warp; r < rows; r += Cfg::kWarps) {
    const float l = merge_weights<32>(part_lse, all_rows, row0 + r, static_cast<int>(gridDim.x), lane,
                                      weights + r * kDecodeTargetCtas, nullptr);
    if (lane == 0) {
      row_lse[r] = l;
      lse[row0 + r] = l;
    }
  }
  __syncthreads();
  // Step 2: every thread of the CTA takes four adjacent columns of a row at a time (one 16-byte
  // load per chunk), over all the CTA's rows.
  const int quads = D / 4;  // D is a multiple of 8
  for (int i = threadIdx.x; i < rows * quads; i += Cfg::kThreads) {
    const int r = i / quads, d0 = 4 * (i % quads);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (row_lse[r] != -INFINITY) {
      merge_columns<4, kMergeUnroll>(part_o, weights + r * kDecodeTargetCtas, all_rows, row0 + r,
                                     static_cast<int>(gridDim.x), D, d0, acc);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) o[(row0 + r) * D + d0 + j] = __float2bfloat16_rn(acc[j]);
  }
#else
  __trap();  // not reached: the variant needs compute capability 8.0 (cp.async, ldmatrix, mma.sync)
#endif
}

// A grid for one configuration: chunks per group, tiles per chunk, and what the choice between
// configurations looks at.
struct Plan {
  int per_sm = 0;         // CTAs of this configuration an SM holds (0: it does not fit this GPU)
  int used = 0;           // chunks per group
  int chunk = 0;          // keys per chunk (whole tiles)
  long long busiest = 0;  // key tiles the busiest SM streams, CTAs spread evenly
  bool one_wave = false;  // every CTA resident at once
  int in_flight = 0;      // tiles an SM has on their way: per_sm x (stages - 1)
};

// CTAs per SM of a configuration at its shared memory (the occupancy calculator, once per
// configuration); 0 when its shared memory is more than a CTA may have on this GPU (an A100's
// 163 KB, an RTX 4090's 99 KB).
template <class Cfg>
int ctas_per_sm() {
  static const int n = [] {
    int device = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (Cfg::kSmemBytes > static_cast<size_t>(optin)) return 0;
    auto* kernel = &mma_chunk_kernel<Cfg>;
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::kSmemBytes)));
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Cfg::kThreads, Cfg::kSmemBytes));
    return per_sm;
  }();
  return n;
}

// v6's rule for one configuration: as many chunks as leave every CTA a slot (one wave), at most
// decode_splits (the scratch's size), whole tiles each, cut from L_max.
template <class Cfg>
Plan plan(int sms, long long groups, int L_max, int max_splits) {
  Plan p;
  p.per_sm = ctas_per_sm<Cfg>();
  if (p.per_sm == 0) return p;
  const long long slots = static_cast<long long>(sms) * p.per_sm;
  const int want = static_cast<int>(std::max<long long>(1, slots / groups));
  const int tiles = ceil_div(L_max, Cfg::kBc);
  const int per_chunk = ceil_div(tiles, std::min(want, max_splits));
  p.used = ceil_div(tiles, per_chunk);
  p.chunk = per_chunk * Cfg::kBc;
  const long long ctas = groups * p.used;
  p.busiest = ceil_div(ctas, static_cast<long long>(sms)) * per_chunk;
  p.one_wave = ctas <= slots;
  p.in_flight = p.per_sm * (Cfg::kStages - 1);
  return p;
}

// Whether plan a is the better: fewer tiles on the busiest SM (the time at the bandwidth), then
// one wave (no CTA waits for a slot and starts its pipeline late), then more tiles in flight.
bool better(const Plan& a, const Plan& b) {
  if (a.per_sm == 0) return false;
  if (b.per_sm == 0) return true;
  if (a.busiest != b.busiest) return a.busiest < b.busiest;
  if (a.one_wave != b.one_wave) return a.one_wave;
  return a.in_flight > b.in_flight;
}

template <class Cfg>
void launch(const Plan& p, const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, int len_add,
            bf16* o, float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
            cudaStream_t stream) {
  const int G = Hq / Hkv, zblocks = ceil_div(G, kRowsPerCta);
  // The merge folds into the last CTA of each group while a group has at most kFoldRows rows
  // (v6's rule); larger groups keep the merge kernel, a programmatic dependent.
  const bool fold = std::min(G, kRowsPerCta) <= kFoldRows;
  if (fold && p.used > 1 &&
      static_cast<long long>(B) * Hkv * zblocks * sizeof(unsigned int) > decode_counter_bytes(Hq, Hkv)) {
    throw std::logic_error("v8_split_kv_occupancy: more groups than ticket counters");
  }
  const size_t rows = static_cast<size_t>(B) * Hq;
  auto* tickets = static_cast<unsigned int*>(scratch);  // (B * Hkv, zblocks), zero between launches
  char* after_tickets = static_cast<char*>(scratch) + decode_counter_bytes(Hq, Hkv);
  float* part_o = reinterpret_cast<float*>(after_tickets);            // (used, B * Hq, D)
  float* part_lse = part_o + static_cast<size_t>(p.used) * rows * D;  // (used, B * Hq)
  const float scale_log2 = scale * 1.4426950408889634f;
  wb::launch_chained(&mma_chunk_kernel<Cfg>, dim3(p.used, B * Hkv, zblocks), dim3(Cfg::kThreads), Cfg::kSmemBytes,
                     stream, q, k_cache, v_cache, seq_lens, len_add, part_o, part_lse, fold ? tickets : nullptr, o, lse,
                     Hkv, G, L_max, D, p.chunk, scale_log2);
  if (!fold) {
    wb::launch_dependent(&decode_merge_kernel, dim3(static_cast<unsigned>(rows)), dim3(kDecodeMergeThreads), 0, stream,
                         static_cast<const float*>(part_o), static_cast<const float*>(part_lse), o, lse, p.used, D);
  }
}

// The pipeline depths the launcher chooses from: 2 stages (the most CTAs per SM), 3 (v6's), and
// 6 (one CTA per SM at D = 128, five tiles in flight).
template <int kD>
void choose_and_launch(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, int len_add,
                       bf16* o, float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
                       cudaStream_t stream) {
  using C2 = MmaDecodeCfg<kD, 2>;
  using C3 = MmaDecodeCfg<kD, 3>;
  using C6 = MmaDecodeCfg<kD, 6>;
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const long long groups = static_cast<long long>(B) * Hkv * ceil_div(Hq / Hkv, kRowsPerCta);
  const int max_splits = decode_splits(B, Hkv, L_max);
  const Plan p2 = plan<C2>(sms, groups, L_max, max_splits);
  const Plan p3 = plan<C3>(sms, groups, L_max, max_splits);
  const Plan p6 = plan<C6>(sms, groups, L_max, max_splits);
  const auto go = [&](auto cfg, const Plan& p) {
    launch<typename decltype(cfg)::type>(p, q, k_cache, v_cache, seq_lens, len_add, o, lse, B, Hq, Hkv, L_max, D, scale,
                                         scratch, stream);
  };
  if (better(p6, p3) && better(p6, p2)) {
    go(std::type_identity<C6>{}, p6);
  } else if (better(p3, p2) || p2.per_sm == 0) {
    if (p3.per_sm == 0) throw std::runtime_error("v8_split_kv_occupancy: no configuration fits this GPU");
    go(std::type_identity<C3>{}, p3);
  } else {
    go(std::type_identity<C2>{}, p2);
  }
}

void decode(const char* who, const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, int len_add,
            bf16* o, float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
            cudaStream_t stream) {
  check_args(who, B, Hq, 1, L_max, D);
  check_groups(who, Hq, Hkv);
  if (scratch == nullptr) {
    throw std::invalid_argument(std::string(who) + ": needs decode_scratch_bytes(B, Hq, Hkv, L_max, D) of scratch");
  }
  with_padded_head(D, [&](auto kd) {
    choose_and_launch<kd.value>(q, k_cache, v_cache, seq_lens, len_add, o, lse, B, Hq, Hkv, L_max, D, scale, scratch,
                                stream);
  });
}

}  // namespace

void v8_decode_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, bf16* o, float* lse,
                    int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode("v8_split_kv_occupancy", q, k_cache, v_cache, seq_lens, 0, o, lse, B, Hq, Hkv, L_max, D, scale, scratch,
         stream);
}

void v8_decode_at_pos_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* pos, bf16* o, float* lse,
                           int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode("v8_split_kv_occupancy (at pos)", q, k_cache, v_cache, pos, 1, o, lse, B, Hq, Hkv, L_max, D, scale, scratch,
         stream);
}

}  // namespace ch08::solution
