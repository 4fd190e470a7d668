// The slab GEMV's parts (step 15, decode/v15_w4a16_slab_mma.cu), shared with the steps built
// on it (step 17, decode/v17_layer_tail_flags.cu): a CTA's rows of W staged in shared memory,
// x staged as BF16 (INT4: each block of 8 permuted), the units of a tile of 8 rows by a pair of
// groups summed on tensor cores (mma.sync m16n8k16), and the host's plan of a CTA's rows.
// v15's header comment says why each part is the way it is.
#pragma once
#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "epilogue.cuh"
#include "ladder.cuh"
#include "w4_row.cuh"

namespace ch09::solution::slab {

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

// Block i (elements 8i .. 8i + 7) of the residual stream bf16(x + r), or x. kCg: x (16-byte
// aligned, no r) written by another CTA of the same kernel, read from L2 (ld.global.cg), never
// from a line L1 may hold from before it was written.
template <bool kCg = false>
__device__ __forceinline__ uint4 block8(const W4Args& a, int i) {
  if constexpr (kCg) return __ldcg(reinterpret_cast<const uint4*>(a.x) + i);
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
// barrier. The copies: gamma and beta are in a group with at most kPendGb groups after it, the
// rows in a group with at most kPendEnd after it (v15: 1 and 0); kCg reads x as block8<true>.
template <bool kNorm, bool kPermute, bool kCg = false, int kPendGb = 1, int kPendEnd = 0>
__device__ __forceinline__ void stage_x(const W4Args& a, uint4* s_x, const bf16* s_gb, float* red) {
  const int blocks = a.K / 8;
  float sum = 0.0f;
  for (int i0 = threadIdx.x; i0 < blocks; i0 += kRowAhead * kThreads) {
    uint4 v[kRowAhead];
#pragma unroll
    for (int j = 0; j < kRowAhead; ++j) {
      if (i0 + j * kThreads < blocks) v[j] = block8<kCg>(a, i0 + j * kThreads);
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
    wb::ptx::cp_async_wait<kPendGb>();  // this thread's copies of gamma and beta (the group before the codes)
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
  wb::ptx::cp_async_wait<kPendEnd>();  // the codes, scales (and the rest) of this thread's copies
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

// Before the wait: the scales of rows n0 .. n0 + nr - 1 of an (N, G) array into s_sc (cp.async,
// 4 bytes each); the rows' bytes (row_bytes each, whole 16-byte pieces) into s_codes at pitch
// bytes a row (cp.async, per_row = row_bytes / 16 pieces of 16 bytes each); the zero points into s_z through registers
// (bytes: 4 of a thread's requested at once). The caller commits the copies' groups.
__device__ __forceinline__ void copy_scales(float* s_sc, const float* scale, long long n0, int nr, int G) {
  const int t = threadIdx.x;
  for (int i = t; i < nr * G; i += kThreads) wb::ptx::cp_async_4(s_sc + i, scale + n0 * G + i);
}
__device__ __forceinline__ void copy_rows(unsigned char* s_codes, const uint8_t* q, long long n0, int nr, int row_bytes,
                                          int per_row, int pitch) {
  for (int c = threadIdx.x; c < nr * per_row; c += kThreads) {
    const int r = c / per_row, j = c - r * per_row;
    wb::ptx::cp_async_16(s_codes + r * pitch + 16 * j, q + (n0 + r) * row_bytes + 16 * j, true);
  }
}
__device__ __forceinline__ void copy_zeros(uint8_t* s_z, const uint8_t* zero, long long n0, int nr, int G) {
  for (int i0 = threadIdx.x; i0 < nr * G; i0 += 4 * kThreads) {
    uint8_t z[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) z[j] = i0 + j * kThreads < nr * G ? zero[n0 * G + i0 + j * kThreads] : 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (i0 + j * kThreads < nr * G) s_z[i0 + j * kThreads] = z[j];
    }
  }
}

// The units of nr rows (a tile of 8 rows x a pair of groups each), spread over the warps; each
// unit's 8 partial sums into s_part (pairs, tiles * 8). The caller then meets a barrier.
// With kUnstaged, rows from u.from on are not in s_codes: they are read where they are (u.q, the
// first row's bytes, u.row_bytes apart; global memory).
struct Unstaged {
  const unsigned char* q = nullptr;
  int from = 0, row_bytes = 0;
};
template <bool kInt4, bool kUnstaged = false>
__device__ __forceinline__ void units(const Plan& p, const unsigned char* s_codes, const uint8_t* s_z,
                                      const float* s_sc, const uint4* s_x, float* s_part, int nr, int K,
                                      const Unstaged& us = {}) {
  const int t = threadIdx.x, G = p.groups;
  const int lane = t % 32, warp = t / 32, g = lane / 4, qd = lane % 4;
  const int rows_alloc = p.tiles * kTileRows;
  for (int u = warp; u < p.tiles * p.pairs; u += kWarps) {
    const int tile = u % p.tiles, pair = u / p.tiles;
    const int row = min(tile * kTileRows + g, nr - 1);  // past nr: a copy of the last row, not stored
    const unsigned char* rp =
        kUnstaged && row >= us.from ? us.q + static_cast<size_t>(row) * us.row_bytes : s_codes + row * p.pitch;
    float sum;
    if constexpr (kInt4) {
      sum = unit_w4(rp, s_z + row * G, s_sc + row * G, s_x, pair, G, K / kInt4Piece, g, qd);
    } else {
      sum = unit_bf16(rp, s_x, pair, G, K, g, qd);
    }
    if (qd == 0 && tile * kTileRows + g < nr) s_part[pair * rows_alloc + tile * kTileRows + g] = sum;
  }
}

// Row r's sum after the barrier: its pairs' partial sums in order.
__device__ __forceinline__ float row_total(const Plan& p, const float* s_part, int r) {
  const int rows_alloc = p.tiles * kTileRows;
  float acc = 0.0f;
  for (int pair = 0; pair < p.pairs; ++pair) acc += s_part[pair * rows_alloc + r];
  return acc;
}

constexpr int align16(int v) { return (v + 15) / 16 * 16; }

// The plan of a CTA's shared memory. rows: ceil(N / ctas) (v15: ctas = the SMs), at most
// slab_bytes of rows and at most kThreads rows.
template <bool kInt4, bool kNorm>
Plan make_plan(int N, int K, int ctas, int slab_bytes) {
  Plan p{};
  const int row_bytes = kInt4 ? K / 2 : 2 * K;
  p.pitch = row_bytes + ((64 - row_bytes % 128) + 128) % 128;  // 64 mod 128
  p.groups = (K + kInt4Group - 1) / kInt4Group;                // BF16: chunks of 128 elements
  p.pairs = (p.groups + 1) / 2;
  // at most one row per thread (the epilogue's thread r finishes row r)
  p.rows = static_cast<int>(std::min<long long>(
      {(static_cast<long long>(N) + ctas - 1) / ctas, std::max(1, slab_bytes / p.pitch), kThreads}));
  p.tiles = (p.rows + kTileRows - 1) / kTileRows;
  p.off_x = align16(p.rows * p.pitch);
  p.off_gb = p.off_x + 2 * K;
  p.off_sc = p.off_gb + (kNorm ? 4 * K : 0);
  p.off_z = p.off_sc + (kInt4 ? align16(4 * p.rows * p.groups) : 0);
  p.off_part = p.off_z + (kInt4 ? align16(p.rows * p.groups) : 0);
  return p;
}

}  // namespace ch09::solution::slab
