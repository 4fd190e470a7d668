// v6 — decode attention at the bandwidth limit: v5's split over the keys, with the arithmetic
// on tensor cores, a grid of exactly one wave, and the merge folded into the same kernel.
//
// v5 reads the cache in the right order but cannot keep up with it. Per key it spends about
// 40 instructions per thread on CUDA cores (a dot product from shared memory, a conversion
// per element, the p V update), three barriers per tile, and its 512 CTAs are 1.3 waves on an
// H100, so the last third of the SMs run alone. What changes:
//
//   tensor cores   the G query heads of a group are the rows of an m16n8k16 A fragment (G <= 16
//                  per CTA; larger groups take several CTAs along grid.z), held in registers
//                  for the whole chunk. A warp takes 16 keys of each 64-key tile:
//                    S (16 x 16) = Q K^T       8 ldmatrix + 16 mma at D = 128
//                    O (16 x D) += P V         P straight from S's accumulators (v4's trick),
//                                              8 ldmatrix.trans + 16 mma
//                  Rows past G are zeros and wasted (12 of 16 at G = 4): tensor cores have the
//                  throughput to spare, and the instructions per key fall about tenfold.
//   warps split keys, not rows   each warp keeps its own running max, sum and O over its
//                  quarter of every tile, so the loop needs no shared-memory exchange; the four
//                  are merged once, at the end, through shared memory (the same log-sum-exp
//                  rule as the chunks).
//   one wave       the grid is sized from the occupancy calculator: chunks = SM slots / (B Hkv)
//                  (two CTAs per SM at D = 128), so every CTA starts at once and each streams
//                  several tiles through a 3-stage cp.async pipeline (64 KB in flight per CTA).
//   merge in the last CTA   v5 merges the chunks in a second kernel. At L 8192 (11 us of
//                  cache at the copy bandwidth) that kernel and the launch around the pair
//                  cost 6-8 us, even launched as a programmatic dependent. Here a CTA writes
//                  its chunk's (o_c, lse_c) to the scratch, fences them and takes a ticket
//                  (atomicAdd on a counter of its group: the CTAs that share its kv head and
//                  rows). The CTA that takes the group's last ticket sees every chunk of the
//                  group: it merges them into o and lse with decode_merge.cuh's code (the same
//                  bits as v5's merge kernel; the lse and weights of a row per warp, then every
//                  thread on four columns of a row at a time) and puts the counter back to
//                  zero, ready for the next launch or replay of a graph. Chapter 9's argmax
//                  merges its CTAs the same way. The last CTA merges its rows in one pass while
//                  a group has at most 4 (G <= 4: a warp per row for the weights, a thread per
//                  four columns of o at D = 128). Larger groups come with fewer CTAs and more
//                  chunks, up to a megabyte of partial results for one CTA to read alone: there
//                  the merge stays a kernel of its own (a programmatic dependent, a CTA per
//                  row), which measured faster on an H100 from G = 8 on.
//   PDL            in a PdlChain (chapter 9's fused step) the kernel is a programmatic
//                  dependent of the QKV GEMV: it asks L2 for its first tiles before it waits.
//                  After its key loop it lets the next kernel be scheduled (the merge kernel of
//                  a large group, or the chain's next kernel); that kernel waits for this whole
//                  grid to end, the last CTAs' merges included.
//
// The counters (one unsigned int per group) sit at the front of the scratch
// (decode_counter_bytes, ch08.cuh), the partial results after them. They must be zero before
// the first launch, and every launch leaves them zero. A memset per call would be a launch of
// its own, the cost this version removes; so the scratch is zeroed once, when it is
// allocated: the harness zeroes a workspace once and hands the same one, never re-poisoned, to
// every call on that shape (harness/check/check.cu, timed.cpp), and chapter 9's model zeroes its
// buffers at load. The counters' place depends on Hq and Hkv only, not on B, so the model's
// batched decode, one scratch for every batch size, finds them zero whatever B the step before
// had. A grid of one chunk per group (B Hkv >= kDecodeTargetCtas, where decode_splits gives 1)
// takes no ticket, which bounds the counters by kDecodeTargetCtas groups. (A scratch that v5
// also writes, from its first byte, would lose them: give each its own.)
//
//   CTA (c, b * Hkv + h, z): keys [c * chunk, (c + 1) * chunk) of kv head h, query rows
//   z * 16 .. z * 16 + 15 of the group; per 64-key tile, warp w owns keys 16 w .. 16 w + 15:
//
//       stage t % 3 (shared):  K tile [64][D + 8]   V tile [64][D + 8]
//                               |  w0  w1  w2  w3 |   (16 keys each)
//       warp w:  S_w = Q K_w^T  ->  online softmax (m_w, l_w)  ->  O_w = a O_w + P_w V_w
//   end:     O, lse of the chunk = log-sum-exp merge of (m_w, l_w, O_w), w = 0..3 -> scratch
//   then (groups of up to 4 rows):  fence; ticket = atomicAdd(counter[b * Hkv + h][z], 1)
//            ticket == chunks - 1 (the group's last):  o, lse of the rows = log-sum-exp merge of
//            the chunks' (o_c, lse_c): weights by warp w for row w, then o by every thread,
//            four columns each;  counter = 0
//
// Run: build/ch08/bin/ch08_bench --op=attention_decode --impl=v5_split_kv_decode,v6_split_kv_mma,cublas_decode
#include <algorithm>
#include <cstdint>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/pdl.cuh"
#include "decode_merge.cuh"
#include "ladder.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch08::solution {
namespace {

using namespace wb::ptx;  // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)

constexpr int kRowsPerCta = 16;  // query heads of a group per CTA: the M of one mma tile
constexpr int kFoldRows = 4;     // the most rows per CTA whose merge the last CTA does (launch)

template <int kD_>
struct MmaDecodeCfg {
  static constexpr int kD = kD_;                  // head size, padded to 32, 64, 96 or 128
  static constexpr int kBc = kDecodeKeysPerTile;  // keys per tile (64)
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kKeysPerWarp = kBc / kWarps;  // 16: one k16 step of P V
  static constexpr int kStages = 3;
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
  // on an H100 (228 KB). The key loop needs no more registers than that leaves, but the
  // compiler hands the merge at the end whatever the bound allows, and would cost occupancy.
  static constexpr int kMinCtas = kD <= 32 ? 6 : kD <= 64 ? 4 : 2;
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
      merge_columns<4, 8>(part_o, weights + r * kDecodeTargetCtas, all_rows, row0 + r, static_cast<int>(gridDim.x), D,
                          d0, acc);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) o[(row0 + r) * D + d0 + j] = __float2bfloat16_rn(acc[j]);
  }
#else
  __trap();  // not reached: the variant needs compute capability 8.0 (cp.async, ldmatrix, mma.sync)
#endif
}

// L_b = seq_lens[b] + len_add, as in v5.
template <class Cfg>
void launch(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, int len_add, bf16* o,
            float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  auto* kernel = &mma_chunk_kernel<Cfg>;
  static const int per_sm = [&] {  // CTAs per SM at this configuration's shared memory, once
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::kSmemBytes)));
    int n = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, Cfg::kThreads, Cfg::kSmemBytes));
    return n < 1 ? 1 : n;
  }();
  const int sms = wb::sm_count();
  const int G = Hq / Hkv, zblocks = ceil_div(G, kRowsPerCta);
  // One wave: as many chunks as leave every CTA a slot, at most decode_splits (the scratch's
  // size), at least one tile each; chunks of whole tiles, cut from L_max.
  const long long groups = static_cast<long long>(B) * Hkv * zblocks;
  const long long slots = static_cast<long long>(sms) * per_sm;
  const int want = static_cast<int>(std::max<long long>(1, slots / groups));
  const int tiles = ceil_div(L_max, Cfg::kBc);
  const int splits = std::min(want, decode_splits(B, Hkv, L_max));
  const int per_chunk = ceil_div(tiles, splits);
  const int used = ceil_div(tiles, per_chunk), chunk = per_chunk * Cfg::kBc;
  // The merge folds into the last CTA of each group while a group has at most kFoldRows rows
  // (one pass of the CTA's warps). Larger groups have fewer CTAs and more chunks: one CTA would
  // merge up to a megabyte alone, where the merge kernel gives every row a CTA of its own.
  const bool fold = std::min(G, kRowsPerCta) <= kFoldRows;
  // Several chunks only where B * Hkv < kDecodeTargetCtas (decode_splits): the groups that merge
  // fit the counters, (b * Hkv + h) * zblocks + z < kDecodeTargetCtas * zblocks.
  if (fold && used > 1 &&
      static_cast<long long>(B) * Hkv * zblocks * sizeof(unsigned int) > decode_counter_bytes(Hq, Hkv)) {
    throw std::logic_error("v6_split_kv_mma: more groups than ticket counters");
  }
  const size_t rows = static_cast<size_t>(B) * Hq;
  auto* tickets = static_cast<unsigned int*>(scratch);  // (B * Hkv, zblocks), zero between launches
  char* after_tickets = static_cast<char*>(scratch) + decode_counter_bytes(Hq, Hkv);
  float* part_o = reinterpret_cast<float*>(after_tickets);          // (used, B * Hq, D)
  float* part_lse = part_o + static_cast<size_t>(used) * rows * D;  // (used, B * Hq)
  const float scale_log2 = scale * 1.4426950408889634f;
  wb::launch_chained(kernel, dim3(used, B * Hkv, zblocks), dim3(Cfg::kThreads), Cfg::kSmemBytes, stream, q, k_cache,
                     v_cache, seq_lens, len_add, part_o, part_lse, fold ? tickets : nullptr, o, lse, Hkv, G, L_max, D,
                     chunk, scale_log2);
  if (!fold) {
    wb::launch_dependent(&decode_merge_kernel, dim3(static_cast<unsigned>(rows)), dim3(kDecodeMergeThreads), 0, stream,
                         static_cast<const float*>(part_o), static_cast<const float*>(part_lse), o, lse, used, D);
  }
}

void decode(const char* who, const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, int len_add,
            bf16* o, float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
            cudaStream_t stream) {
  check_decode_args(who, B, Hq, Hkv, L_max, D, scratch);
  with_padded_head(D, [&](auto kd) {
    launch<MmaDecodeCfg<kd.value>>(q, k_cache, v_cache, seq_lens, len_add, o, lse, B, Hq, Hkv, L_max, D, scale, scratch,
                                   stream);
  });
}

}  // namespace

void v6_decode_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, bf16* o, float* lse,
                    int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode("v6_split_kv_mma", q, k_cache, v_cache, seq_lens, 0, o, lse, B, Hq, Hkv, L_max, D, scale, scratch, stream);
}

void v6_decode_at_pos_bf16(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* pos, bf16* o, float* lse,
                           int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch, cudaStream_t stream) {
  decode("v6_split_kv_mma (at pos)", q, k_cache, v_cache, pos, 1, o, lse, B, Hq, Hkv, L_max, D, scale, scratch, stream);
}

}  // namespace ch08::solution
