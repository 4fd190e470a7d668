// Step 15 — the INT4 GEMVs with each CTA's whole slab of weights copied into shared memory
// before the wait, few registers so that the next kernel's CTA fits beside it, and the dot
// products on tensor cores (gpt2 --int4 --decode=fused).
//
// What changes against v14_w4a16_loads_ahead, and why:
//   * Where the early loads land. v14 holds a lane's batch in registers: 2 CTAs of 8 warps at
//     128 registers a lane fill an SM's register file, so no CTA of the NEXT kernel can be
//     resident until one of this kernel's CTAs has ended. The next kernel's loads "before the
//     wait" therefore start only in this kernel's tail. Here a CTA copies its rows' codes into
//     shared memory with cp.async (no registers held while they travel), together with their
//     scales, zero points, bias, and the LayerNorm's gamma and beta, and runs at 64 registers a
//     lane (16K registers a CTA). One CTA per SM and its neighbour in the chain fit side by
//     side (beside three CTAs of chapter 8's decode attention too, 3 x 16K registers), so the
//     next kernel's copies travel during the whole of this one.
//   * When the next kernel may start. The CTA triggers it right after its own wait, before it
//     stages x: by then this CTA's copies were issued long ago, and the next kernel's CTAs can
//     take their place on the SM and issue theirs.
//   * A CTA's rows are contiguous (rows = ceil(N / SMs), at most 48 KB of codes): its slab is
//     one contiguous range of q, copied 16 bytes a thread at a time. Each staged row is padded
//     to 64 mod 128 bytes, so the rows g and g + 1 that the lanes of one quarter-warp read
//     meet the two halves of the banks.
//   * The dot products on tensor cores (mma.sync m16n8k16, BF16 in, FP32 sums). At 32 weights
//     per 16-byte piece, v14's dot32_w4 costs about 3.4 instructions per weight plus a 16-byte
//     shared load of x per 4 weights; alone on an SM the MLP's fc needs ~2 µs of that after
//     the wait. A code becomes a BF16 (q - zero) with one LOP3 (mask a pair of nibbles into
//     the mantissas of 128.0, 0x4300) and one HSUB2 (minus 128 + zero), two codes at a time,
//     exactly; 256 products then take one mma. About 1.4 instructions per weight, and x is
//     read once per 16 rows' worth of products.
//       A (16 x 16): rows m < 8 are row g of the CTA's tile of 8 rows, group 2j (piece qd of
//                    it: lane (g, qd) loads it), rows m >= 8 the same rows, group 2j + 1.
//       B (16 x 8):  column 0 is x of group 2j, column 1 x of group 2j + 1 (columns 2..7 are
//                    copies): D[g][0] is row g's sum over group 2j, D[g + 8][1] over 2j + 1,
//                    lane (g, 0) holds both (c0 and c3) and scales each by its group's scale.
//       The k order inside an mma is free, as long as A and B agree: step 2 w + h of a piece
//       takes codes k0 + 8 w + h + {0, 2} (the low nibbles of bytes h, h + 2 of word w: one
//       mask) and k0 + 8 w + h + {4, 6} (the high nibbles), so x is staged as BF16 with each
//       block of 8 permuted to (x0, x2, x4, x6, x1, x3, x5, x7): B is one 32-bit word each.
//     Every (q - zero) and every x is exact in BF16, each product exact in FP32, as in v14.
//   * The units (a tile of 8 rows x a pair of groups) are spread over the CTA's 8 warps; each
//     writes its 8 rows' partial sums to shared memory, and thread r adds row r's in the
//     order of the pairs: the order is fixed, and the split over warps does not change it.
//   * gamma and beta are in shared memory before the wait (v14 read them from L2 after the
//     LayerNorm's statistics: one more trip on the critical path).
// What stays: the residual pair and h, the LayerNorm's arithmetic (BF16-rounded like v6's),
// the epilogues, the KV store, the refusals (K % 32 != 0, K > 8192).
//
// BF16 rows take the same kernel (A straight from the staged rows, x in natural order) where a
// CTA's rows fit in one slab with one CTA per SM (ln_gemv_slab, ln_gemv_qkv_slab,
// gemv_residual_slab; slab_bf16_fits): every layer GEMV of GPT-2 124M; elsewhere v6's kernels.
//
// Measured (NVIDIA H200, random weights, prompt 512, 128 new, --decode=fused, one session):
// GPT-2 124M BF16 3,669.9 -> 3,980.6 tok/s (2.68x the PyTorch peer's 1,486); 1.5B --int4 647.0
// -> 657.9 (1.30x BF16's 505.0: the target, 1.6x, is missed; docs/ch09-transformer.md, "v15").
//
// Run: build/ch09/bin/ch09_bench --impl=v15_w4a16_slab_mma,v14_w4a16_loads_ahead
//      build/ch09/bin/gpt2 --weights=1.5B.safetensors --prompt-len=512 --new=128 --decode=fused --int4
#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "w4_row.cuh"

namespace ch09::solution {
namespace {

using w4::kThreads;  // 256 (w4_row.cuh)
using w4::kWarps;    // 8
using w4::W4Args;

constexpr int kSlabBytes = 48 * 1024;  // codes of one CTA at most
constexpr int kTileRows = 8;           // rows per mma unit (A's rows m and m + 8 are one row, two groups)
constexpr int kRowAhead = 4;           // 16-byte pieces of x per thread per trip to L2 (K <= 8192: one trip)
constexpr int kSmemCap = 200 * 1024;   // the plan's shared memory at most (K = 8192 with the LayerNorm: ~100 KB)

// The CTA's layout, computed on the host.
struct Plan {
  int rows;                                    // rows per CTA (the last may have fewer)
  int tiles;                                   // ceil(rows / kTileRows)
  int pitch;                                   // bytes per staged row of codes: K / 2 rounded up to 64 mod 128
  int groups;                                  // G = ceil(K / 128)
  int pairs;                                   // ceil(G / 2): the units of one tile
  int off_x, off_gb, off_sc, off_z, off_part;  // byte offsets in the dynamic shared memory
};

// Element e of a block of 8 goes to place (e % 2) * 4 + e / 2: (x0, x2, x4, x6, x1, x3, x5, x7).
__device__ __forceinline__ uint4 permute8(const uint4& v) {
  uint4 o;
  o.x = __byte_perm(v.x, v.y, 0x5410);  // x0, x2  (x0 x1 | x2 x3 -> low halves)
  o.y = __byte_perm(v.z, v.w, 0x5410);  // x4, x6
  o.z = __byte_perm(v.x, v.y, 0x7632);  // x1, x3
  o.w = __byte_perm(v.z, v.w, 0x7632);  // x5, x7
  return o;
}

// Block i (elements 8i .. 8i + 7) of the residual stream bf16(x + r), or x.
__device__ __forceinline__ uint4 block8(const W4Args& a, int i) {
  if (a.vec) return w4::residual8(a, i);
  uint4 out;
  bf16* o = reinterpret_cast<bf16*>(&out);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    float v = __bfloat162float(a.x[8 * i + e]);
    if (a.r != nullptr) v += __bfloat162float(a.r[8 * i + e]);
    o[e] = __float2bfloat16(v);
  }
  return out;
}

__device__ __forceinline__ float sum8(const uint4& v) {
  const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);
  float s = 0.0f;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 f = __bfloat1622float2(p[e]);
    s += f.x + f.y;
  }
  return s;
}

// x into shared memory as BF16, each block of 8 permuted (permute8): bf16(x + r) (CTA 0 stores
// it to h), with kNorm its LayerNorm rounded to BF16 (v11's arithmetic). A thread owns blocks
// t, t + 256, ...: all its pieces of x (and r) requested at once (kRowAhead of them, K <= 8192),
// kept in shared memory in natural order between the passes, permuted in the last. gamma and
// beta are in s_gb already (vec) when the second statistic's barrier has passed. Ends with a
// barrier.
template <bool kNorm, bool kPermute>
__device__ __forceinline__ void stage_x(const W4Args& a, uint4* s_x, const bf16* s_gb, float* red) {
  const int blocks = a.K / 8;
  float sum = 0.0f;
  for (int i0 = threadIdx.x; i0 < blocks; i0 += kRowAhead * kThreads) {
    uint4 v[kRowAhead];
#pragma unroll
    for (int j = 0; j < kRowAhead; ++j) {
      if (i0 + j * kThreads < blocks) v[j] = block8(a, i0 + j * kThreads);
    }
#pragma unroll
    for (int j = 0; j < kRowAhead; ++j) {
      const int i = i0 + j * kThreads;
      if (i >= blocks) break;
      if (a.h != nullptr && blockIdx.x == 0) {
        if (a.vec) {
          reinterpret_cast<uint4*>(a.h)[i] = v[j];
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) a.h[8 * i + e] = reinterpret_cast<const bf16*>(&v[j])[e];
        }
      }
      if constexpr (kNorm) {
        sum += sum8(v[j]);
        s_x[i] = v[j];
      } else {
        s_x[i] = kPermute ? permute8(v[j]) : v[j];
      }
    }
  }
  if constexpr (kNorm) {
    const float mean = wb::block_sum<kThreads>(sum, red) / static_cast<float>(a.K);
    float sq = 0.0f;
    for (int i = threadIdx.x; i < blocks; i += kThreads) {
      const uint4 v = s_x[i];
      const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 f = __bfloat1622float2(p[e]);
        sq += (f.x - mean) * (f.x - mean) + (f.y - mean) * (f.y - mean);
      }
    }
    wb::ptx::cp_async_wait<1>();  // this thread's copies of gamma and beta (the group before the codes)
    const float rstd = rsqrtf(wb::block_sum<kThreads>(sq, red + kWarps) / static_cast<float>(a.K) + a.eps);
    // (block_sum's barrier has made every thread's gamma and beta visible)
    for (int i = threadIdx.x; i < blocks; i += kThreads) {
      float gf[8], bf[8];
      if (a.vec) {
        const uint4 gv = reinterpret_cast<const uint4*>(s_gb)[i], bv = reinterpret_cast<const uint4*>(s_gb + a.K)[i];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          gf[e] = __bfloat162float(reinterpret_cast<const bf16*>(&gv)[e]);
          bf[e] = __bfloat162float(reinterpret_cast<const bf16*>(&bv)[e]);
        }
      } else {  // not 16-byte aligned: from global memory, element by element
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          gf[e] = __bfloat162float(a.gamma[8 * i + e]);
          bf[e] = __bfloat162float(a.beta[8 * i + e]);
        }
      }
      const uint4 v = s_x[i];
      const bf16* ve = reinterpret_cast<const bf16*>(&v);
      uint4 out;
      bf16* oe = reinterpret_cast<bf16*>(&out);
#pragma unroll
      for (int e = 0; e < 8; ++e) oe[e] = __float2bfloat16((__bfloat162float(ve[e]) - mean) * rstd * gf[e] + bf[e]);
      s_x[i] = kPermute ? permute8(out) : out;
    }
  }
  wb::ptx::cp_async_wait<0>();  // the codes, scales (and the rest) of this thread's copies
  __syncthreads();
}

// Two codes (the nibbles at bits 0-3 and 16-19 of w) as BF16 (q - zero), exactly: the masked
// nibbles sit in the mantissas of 128.0 (0x4300), and c2 holds 128 + zero twice.
__device__ __forceinline__ uint32_t dequant2(uint32_t w, uint32_t c2) {
  const uint32_t t = (w & 0x000F000Fu) | 0x43004300u;
  const __nv_bfloat162 d =
      __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&t), *reinterpret_cast<const __nv_bfloat162*>(&c2));
  return *reinterpret_cast<const uint32_t*>(&d);
}

// The unit (tile, pair) of INT4 codes: A's rows m < 8 are the tile's rows over group 2 pair,
// rows m >= 8 the same rows over group 2 pair + 1. Returns row g's scaled sum (lane qd = 0).
__device__ __forceinline__ float unit_w4(const unsigned char* rp, const uint8_t* zp, const float* sp, const uint4* s_x,
                                         int pair, int G, int pieces, int g, int qd) {
  const int g0 = 2 * pair, g1 = 2 * pair + 1;      // the groups of A's rows m < 8 and m >= 8
  const int pc0 = 4 * g0 + qd, pc1 = 4 * g1 + qd;  // this lane's piece of each
  const bool ok0 = pc0 < pieces, ok1 = pc1 < pieces;
  const uint4 w0 = ok0 ? *reinterpret_cast<const uint4*>(rp + 16 * pc0) : make_uint4(0, 0, 0, 0);
  const uint4 w1 = ok1 ? *reinterpret_cast<const uint4*>(rp + 16 * pc1) : make_uint4(0, 0, 0, 0);
  // 128 + zero, twice; a missing piece has codes 0 and zero point 0: (q - zero) = 0
  const uint32_t z0 = ok0 ? zp[g0] : 0u, z1 = ok1 ? zp[g1] : 0u;
  const uint32_t c0 = (0x4300u | z0) * 0x00010001u, c1 = (0x4300u | z1) * 0x00010001u;
  // B: column g of the lane's x: group g1 for odd columns (where it exists), g0 otherwise
  const int gb = (g & 1) && g1 < G ? g1 : g0;
  const uint4* xp = s_x + 4 * min(4 * gb + qd, pieces - 1);
  const uint32_t w0s[4] = {w0.x, w0.y, w0.z, w0.w}, w1s[4] = {w1.x, w1.y, w1.z, w1.w};
  float d[2][4] = {};  // two chains of mma (h = 0, 1), half as long
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const uint4 xv = xp[w];  // (x0, x2), (x4, x6), (x1, x3), (x5, x7) of block 4 piece + w
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t af[4];
      af[0] = dequant2(w0s[w] >> (8 * h), c0);      // row g, codes k0 + 8w + h + {0, 2}
      af[1] = dequant2(w1s[w] >> (8 * h), c1);      // the same row, the next group
      af[2] = dequant2(w0s[w] >> (8 * h + 4), c0);  // row g, codes k0 + 8w + h + {4, 6}
      af[3] = dequant2(w1s[w] >> (8 * h + 4), c1);
      wb::ptx::mma_16816<bf16>(d[h], af, h ? xv.z : xv.x, h ? xv.w : xv.y);
    }
  }
  if (qd != 0) return 0.0f;
  const float s0 = sp[g0], s1 = g1 < G ? sp[g1] : 0.0f;
  return s0 * (d[0][0] + d[1][0]) + s1 * (d[0][3] + d[1][3]);
}

// The unit (tile, pair) of BF16 rows: chunks of 128 elements play the groups' part, with no
// scale. A lane takes 8 consecutive elements of its row (16 bytes) per 32 of a chunk: two mma
// steps, elements {0, 1 | 2, 3} then {4, 5 | 6, 7} as A's (k, k + 8) pairs, x in natural order.
__device__ __forceinline__ float unit_bf16(const unsigned char* rp, const uint4* s_x, int pair, int chunks, int K,
                                           int g, int qd) {
  const int c0 = 2 * pair, c1 = 2 * pair + 1;
  const int cb = (g & 1) && c1 < chunks ? c1 : c0;
  float d[2][4] = {};  // two chains of mma
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int ka = 128 * c0 + 32 * s + 8 * qd, kb = 128 * c1 + 32 * s + 8 * qd, kx = 128 * cb + 32 * s + 8 * qd;
    const uint4 wa = ka < K ? *reinterpret_cast<const uint4*>(rp + 2 * ka) : make_uint4(0, 0, 0, 0);
    const uint4 wn = kb < K ? *reinterpret_cast<const uint4*>(rp + 2 * kb) : make_uint4(0, 0, 0, 0);
    const uint4 xv = kx < K ? s_x[kx / 8] : make_uint4(0, 0, 0, 0);
    const uint32_t a0[4] = {wa.x, wn.x, wa.y, wn.y}, a1[4] = {wa.z, wn.z, wa.w, wn.w};
    wb::ptx::mma_16816<bf16>(d[0], a0, xv.x, xv.y);
    wb::ptx::mma_16816<bf16>(d[1], a1, xv.z, xv.w);
  }
  return qd == 0 ? (d[0][0] + d[1][0]) + (d[0][3] + d[1][3]) : 0.0f;
}

// grid (ceil(N / plan.rows)), block (kThreads), dynamic shared memory (launch_slab): CTA c takes
// rows n0 = c * rows ... n0 + rows - 1.
//   kInt4      a.q holds INT4 codes with scales and zero points; else BF16 rows (a.q's bytes)
//   kNorm      the LayerNorm in the prologue (ln_gemv, ln_gemv_qkv)
//   kResidual  y = res + (sum + b), one rounding (gemv_residual); else epilogue(sum, b)
// At most 64 registers (4 CTAs per SM by the registers): a neighbour kernel's CTA fits beside it.
template <bool kInt4, bool kNorm, bool kResidual>
__global__ void __launch_bounds__(kThreads, 4) slab_kernel(const W4Args a, const Plan p) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[2 * kWarps];                            // block_sum: two exchange arrays
  unsigned char* s_codes = smem;                               // (rows, pitch)
  auto* s_x = reinterpret_cast<uint4*>(smem + p.off_x);        // (K / 8) blocks (INT4: permuted)
  auto* s_gb = reinterpret_cast<bf16*>(smem + p.off_gb);       // gamma (K), beta (K): kNorm and vec
  auto* s_sc = reinterpret_cast<float*>(smem + p.off_sc);      // (rows, G): INT4
  auto* s_z = reinterpret_cast<uint8_t*>(smem + p.off_z);      // (rows, G): INT4
  auto* s_part = reinterpret_cast<float*>(smem + p.off_part);  // (pairs, tiles * 8)
  const int t = threadIdx.x, G = p.groups;
  const int row_bytes = kInt4 ? a.K / 2 : 2 * a.K, per_row = row_bytes / 16;
  const long long n0 = static_cast<long long>(blockIdx.x) * p.rows;
  const int nr = static_cast<int>(min(static_cast<long long>(p.rows), a.N - n0));

  // 1. Before the wait: nothing here is written by an earlier kernel. Group 0 of the copies:
  //    gamma, beta and the scales; group 1: the rows. The zero points (bytes) and the bias go
  //    through registers.
  if constexpr (kNorm) {
    if (a.vec) {
      for (int i = t; i < a.K / 8; i += kThreads) {
        wb::ptx::cp_async_16(s_gb + 8 * i, a.gamma + 8 * i, true);
        wb::ptx::cp_async_16(s_gb + a.K + 8 * i, a.beta + 8 * i, true);
      }
    }
  }
  if constexpr (kInt4) {
    for (int i = t; i < nr * G; i += kThreads) wb::ptx::cp_async_4(s_sc + i, a.scale + n0 * G + i);
  }
  wb::ptx::cp_async_commit();
  for (int c = t; c < nr * per_row; c += kThreads) {
    const int r = c / per_row, j = c - r * per_row;
    wb::ptx::cp_async_16(s_codes + r * p.pitch + 16 * j, a.q + (n0 + r) * row_bytes + 16 * j, true);
  }
  wb::ptx::cp_async_commit();
  const float bias = t < nr && a.epi != Epilogue::None ? __bfloat162float(a.b[n0 + t]) : 0.0f;
  if constexpr (kInt4) {
    for (int i0 = t; i0 < nr * G; i0 += 4 * kThreads) {
      uint8_t z[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) z[j] = i0 + j * kThreads < nr * G ? a.zero[n0 * G + i0 + j * kThreads] : 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (i0 + j * kThreads < nr * G) s_z[i0 + j * kThreads] = z[j];
      }
    }
  }

  // 2. Wait for the previous kernel (x, r and res are its outputs); the next kernel may start
  //    now: its CTAs fit beside this one and put their own copies in flight.
  wb::pdl_wait();
  wb::pdl_trigger();
  const float resid = kResidual && t < nr ? __bfloat162float(a.res[n0 + t]) : 0.0f;  // in flight meanwhile
  stage_x<kNorm, kInt4>(a, s_x, s_gb, red);

  // 3. The units: tile (8 rows) x pair of groups, spread over the warps.
  const int lane = t % 32, warp = t / 32, g = lane / 4, qd = lane % 4;
  const int rows_alloc = p.tiles * kTileRows;
  for (int u = warp; u < p.tiles * p.pairs; u += kWarps) {
    const int tile = u % p.tiles, pair = u / p.tiles;
    const int row = min(tile * kTileRows + g, nr - 1);  // past nr: a copy of the last row, not stored
    const unsigned char* rp = s_codes + row * p.pitch;
    float sum;
    if constexpr (kInt4) {
      sum = unit_w4(rp, s_z + row * G, s_sc + row * G, s_x, pair, G, a.K / kInt4Piece, g, qd);
    } else {
      sum = unit_bf16(rp, s_x, pair, G, a.K, g, qd);
    }
    if (qd == 0 && tile * kTileRows + g < nr) s_part[pair * rows_alloc + tile * kTileRows + g] = sum;
  }
  __syncthreads();

  // 4. Row t's sum, the pairs in order, and the epilogue.
  if (t >= nr) return;
  float acc = 0.0f;
  for (int pair = 0; pair < p.pairs; ++pair) acc += s_part[pair * rows_alloc + t];
  const long long n = n0 + t;
  if constexpr (kResidual) {
    a.y[n] = __float2bfloat16(resid + (acc + bias));  // one rounding
  } else {
    const bf16 out = epilogue_value<bf16>(acc, bias, a.epi);  // + bias, GELU, one rounding
    a.y[n] = out;
    if (a.kv.k_cache != nullptr) store_kv(a.kv, static_cast<int>(n), out);
  }
}

// --- launchers -----------------------------------------------------------------------------

constexpr int align16(int v) { return (v + 15) / 16 * 16; }

// The plan of a CTA's shared memory. rows: ceil(N / SMs), at most kSlabBytes of rows and at most
// kThreads rows.
template <bool kInt4, bool kNorm>
Plan make_plan(int N, int K) {
  Plan p{};
  const int row_bytes = kInt4 ? K / 2 : 2 * K;
  p.pitch = row_bytes + ((64 - row_bytes % 128) + 128) % 128;  // 64 mod 128
  p.groups = (K + kInt4Group - 1) / kInt4Group;                // BF16: chunks of 128 elements
  p.pairs = (p.groups + 1) / 2;
  const int sms = wb::sm_count();
  // at most one row per thread (the epilogue's thread r finishes row r)
  p.rows = static_cast<int>(
      std::min<long long>({(static_cast<long long>(N) + sms - 1) / sms, std::max(1, kSlabBytes / p.pitch), kThreads}));
  p.tiles = (p.rows + kTileRows - 1) / kTileRows;
  p.off_x = align16(p.rows * p.pitch);
  p.off_gb = p.off_x + 2 * K;
  p.off_sc = p.off_gb + (kNorm ? 4 * K : 0);
  p.off_z = p.off_sc + (kInt4 ? align16(4 * p.rows * p.groups) : 0);
  p.off_part = p.off_z + (kInt4 ? align16(p.rows * p.groups) : 0);
  return p;
}

template <bool kInt4, bool kNorm, bool kResidual>
void launch_slab(W4Args a, const Plan& p, cudaStream_t stream) {
  a.vec = w4::vec_ok(a, kNorm);
  const int smem = p.off_part + 4 * p.pairs * p.tiles * kTileRows;
  auto* kernel = &slab_kernel<kInt4, kNorm, kResidual>;
  // Above 48 KB by opt-in; and the SM's whole carveout as shared memory, the configuration
  // chapter 8's decode attention runs in: CTAs of kernels with different carveouts cannot share
  // an SM, and this kernel's CTAs are to be resident beside their neighbours'.
  static const bool raised = [&] {
    wb::allow_dynamic_smem(kernel, kSmemCap);
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)raised;
  if (smem > kSmemCap) throw std::logic_error("v15_w4a16_slab_mma: the plan exceeds shared memory");
  const long long grid = (static_cast<long long>(a.N) + p.rows - 1) / p.rows;
  wb::launch_chained(kernel, static_cast<unsigned>(grid), kThreads, static_cast<size_t>(smem), stream, a, p);
}

template <bool kNorm, bool kResidual>
void launch_w4(const W4Args& a, cudaStream_t stream) {
  launch_slab<true, kNorm, kResidual>(a, make_plan<true, kNorm>(a.N, a.K), stream);
}

// BF16 rows: only where every CTA's rows fit in one slab with one CTA per SM (GPT-2 124M's
// layers: 28 to 38 KB), and rows are whole 16-byte pieces; elsewhere (false) the caller runs v6.
// The shape is looked at before the GPU (the plan reads its SM count), so that a shape v6 refuses
// reaches v6's refusal on a machine without one.
bool bf16_fits(int N, int K) {
  if (K % 8 != 0 || K > kInt4MaxK) return false;
  const Plan p = make_plan<false, true>(N, K);
  return (static_cast<long long>(N) + p.rows - 1) / p.rows <= wb::sm_count();
}

template <bool kNorm, bool kResidual>
bool launch_bf16(W4Args a, const bf16* w, cudaStream_t stream) {
  if (!bf16_fits(a.N, a.K) || !wb::aligned16(w)) return false;
  const Plan p = make_plan<false, kNorm>(a.N, a.K);
  a.q = reinterpret_cast<const uint8_t*>(w);  // the rows' bytes
  launch_slab<false, kNorm, kResidual>(a, p, stream);
  return true;
}

}  // namespace

void gemv_w4a16_slab(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b, bf16* y,
                     int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  w4::require_w4("K", K, scale, zero, q);
  launch_w4<false, false>(w4::w4_args(x, nullptr, nullptr, nullptr, nullptr, q, scale, zero, b, y, N, K, epi, 0.0f),
                          stream);
}

void ln_gemv_w4a16_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                        const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* y, int N, int C,
                        Epilogue epi, float eps, cudaStream_t stream) {
  launch_w4<true, false>(w4::ln_gemv_w4_args(x, r, gamma, beta, q, scale, zero, b, h, y, N, C, epi, eps), stream);
}

void ln_gemv_qkv_w4a16_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const uint8_t* q,
                            const float* scale, const uint8_t* zero, const bf16* b, bf16* h, bf16* qkv, int C,
                            float eps, const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  launch_w4<true, false>(
      w4::ln_gemv_qkv_w4_args("ln_gemv_qkv_w4a16_slab", x, r, gamma, beta, q, scale, zero, b, h, qkv, C, eps, kv),
      stream);
}

void gemv_residual_w4a16_slab(const bf16* x, const uint8_t* q, const float* scale, const uint8_t* zero, const bf16* b,
                              const bf16* res, bf16* y, int N, int K, cudaStream_t stream) {
  launch_w4<false, true>(w4::gemv_residual_w4_args("gemv_residual_w4a16_slab", x, q, scale, zero, b, res, y, N, K),
                         stream);
}

bool slab_bf16_fits(int N, int K) { return bf16_fits(N, K); }

void ln_gemv_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w, const bf16* b,
                  bf16* h, bf16* y, int N, int C, Epilogue epi, float eps, cudaStream_t stream) {
  require_valid(1, N, C, epi, b);
  if (!launch_bf16<true, false>(w4::w4_args(x, r, gamma, beta, h, nullptr, nullptr, nullptr, b, y, N, C, epi, eps), w,
                                stream)) {
    ln_gemv<bf16>(x, r, gamma, beta, w, b, h, y, N, C, epi, eps, stream);
  }
}

void ln_gemv_qkv_slab(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, const bf16* w, const bf16* b,
                      bf16* h, bf16* qkv, int C, float eps, const KvCacheTarget<bf16>& kv, cudaStream_t stream) {
  require_valid(1, 3 * C, C, Epilogue::Bias, b);
  if (kv.k_cache == nullptr || kv.v_cache == nullptr || kv.pos == nullptr || kv.H * kv.D != C || kv.P < 1) {
    ln_gemv_qkv<bf16>(x, r, gamma, beta, w, b, h, qkv, C, eps, kv, stream);  // v6's refusal, by name
    return;
  }
  W4Args a = w4::w4_args(x, r, gamma, beta, h, nullptr, nullptr, nullptr, b, qkv, 3 * C, C, Epilogue::Bias, eps);
  a.kv = kv;
  if (!launch_bf16<true, false>(a, w, stream)) ln_gemv_qkv<bf16>(x, r, gamma, beta, w, b, h, qkv, C, eps, kv, stream);
}

void gemv_residual_slab(const bf16* x, const bf16* w, const bf16* b, const bf16* res, bf16* y, int N, int K,
                        cudaStream_t stream) {
  require_valid(1, N, K, Epilogue::Bias, b);
  W4Args a =
      w4::w4_args(x, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, b, y, N, K, Epilogue::Bias, 0.0f);
  a.res = res;
  if (res == nullptr || !launch_bf16<false, true>(a, w, stream)) gemv_residual<bf16>(x, w, b, res, y, N, K, stream);
}

}  // namespace ch09::solution
