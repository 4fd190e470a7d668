// v3 — one warp per row, sums by xor shuffles: the decode form of exercise 4.
//
// What changes over v2:
//   * a row belongs to one warp, and a block of 128 threads holds 4 rows. A sum is five
//     __shfl_xor_sync steps, after which every lane holds the total: no shared memory, no
//     barrier, and a warp whose row is past N simply returns;
//   * when every row starts 16-byte aligned (ld % 8 == 0), a lane reads 8 BF16 at once
//     (a uint4): a warp's load moves 512 contiguous bytes. The last C % 8 elements of a
//     row, and every element of a row that starts misaligned, go one by one.
//
//   lane:   0        1        2            31       0      ...   (16-byte packs of 8 BF16)
//   row:  [ 0..7  | 8..15  | 16..23 | ... | 248..255 | 256..263 | ... | tail: C % 8 scalars ]
//
// Why it is faster: 16-byte accesses need 8x fewer load instructions than 2-byte ones, and
// the tree costs no barrier. For decode (N = 1 .. 64) a block per row would leave most of
// its 256 threads waiting on a short row at each of its 8 barriers; a warp per row costs
// five shuffles. What it still wastes: h is written, then read back twice (from L2), and
// the row is too long for one warp at large C: 4096 BF16 are 16 packs per lane, loaded
// one after the other, and only N warps run. v4 keeps the row in registers instead, and
// gives long rows a block.
//
// From norm_common.cuh: store_stats (the row's mean and rstd out).
//
// Run: build/ch06/bin/ch06_bench --impl=v3_warp_shuffle,v2_block_smem_reduce
#include "ladder.cuh"
#include "norm_common.cuh"

namespace ch06::solution {
namespace {

constexpr int kRowsPerBlock = 4;  // one row per warp
constexpr int kThreads = 32 * kRowsPerBlock;
constexpr int kN = Pack<bf16>::kN;  // 8 BF16 per 16-byte pack

template <Norm kNorm>
__global__ void __launch_bounds__(kThreads)
    warp_row_kernel(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                    float* mean_out, float* rstd_out, int N, int C, int ld, float eps, bool aligned) {
  const int n = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (n >= N) return;  // no barrier below: a warp without a row can leave
  const bf16* xr = row_ptr(x, n, ld);
  const bf16* rr = row_ptr(r, n, ld);
  bf16* hr = row_ptr(h, n, ld);
  bf16* yr = row_ptr(y, n, ld);
  // The packed part: packs [0, whole) by 16-byte access when aligned; the rest one by one.
  const int whole = aligned ? C / kN : 0;
  const int tail_start = whole * kN;

  // pass 1: h = bf16(x + r), stored; the sum of h (LayerNorm) or of h^2 (RMSNorm)
  float sum = 0.0f;
  for (int p = lane; p < whole; p += 32) {
    Pack<bf16> a, b, s;
    a.load16(xr + p * kN);
    b.load16(rr + p * kN);
    float v[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) v[k] = a.get(k) + b.get(k);
    s.set(v);  // rounds to BF16
    s.store16(hr + p * kN);
#pragma unroll
    for (int k = 0; k < kN; ++k) sum += kNorm == Norm::Layer ? s.get(k) : s.get(k) * s.get(k);
  }
  for (int c = tail_start + lane; c < C; c += 32) {
    const bf16 hv = __float2bfloat16_rn(__bfloat162float(xr[c]) + __bfloat162float(rr[c]));
    hr[c] = hv;
    const float v = __bfloat162float(hv);
    sum += kNorm == Norm::Layer ? v : v * v;
  }
  sum = warp_sum(sum);
  // A lane reads back below only what it stored above, so no fence or barrier is needed.

  float mean = 0.0f, rstd;
  if constexpr (kNorm == Norm::Layer) {
    mean = sum / C;
    float sq = 0.0f;
    for (int p = lane; p < whole; p += 32) {
      Pack<bf16> s;
      s.load16(hr + p * kN);
#pragma unroll
      for (int k = 0; k < kN; ++k) sq += (s.get(k) - mean) * (s.get(k) - mean);
    }
    for (int c = tail_start + lane; c < C; c += 32) {
      const float d = __bfloat162float(hr[c]) - mean;
      sq += d * d;
    }
    rstd = rsqrtf(warp_sum(sq) / C + eps);
  } else {
    rstd = rsqrtf(sum / C + eps);
  }

  // pass 3: y
  for (int p = lane; p < whole; p += 32) {
    Pack<bf16> s, g, b, out;
    s.load16(hr + p * kN);
    g.load16(gamma + p * kN);
    if constexpr (kNorm == Norm::Layer) b.load16(beta + p * kN);
    float v[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      v[k] = (s.get(k) - mean) * rstd * g.get(k);
      if constexpr (kNorm == Norm::Layer) v[k] += b.get(k);
    }
    out.set(v);
    out.store16(yr + p * kN);
  }
  for (int c = tail_start + lane; c < C; c += 32) {
    float v = (__bfloat162float(hr[c]) - mean) * rstd * __bfloat162float(gamma[c]);
    if constexpr (kNorm == Norm::Layer) v += __bfloat162float(beta[c]);
    yr[c] = __float2bfloat16_rn(v);
  }
  if (lane == 0) store_stats<kNorm>(mean_out, rstd_out, n, mean, rstd);
}

}  // namespace

void v3_residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                           float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  const bool aligned = rows_aligned<bf16>(ld, {x, r, gamma, beta, h, y});
  warp_row_kernel<Norm::Layer><<<ceil_div(N, kRowsPerBlock), kThreads, 0, stream>>>(x, r, gamma, beta, h, y, mean, rstd,
                                                                                    N, C, ld, eps, aligned);
  WB_CHECK_LAUNCH();
}

void v3_residual_rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N, int C,
                         int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  const bool aligned = rows_aligned<bf16>(ld, {x, r, gamma, h, y});
  warp_row_kernel<Norm::Rms><<<ceil_div(N, kRowsPerBlock), kThreads, 0, stream>>>(x, r, gamma, nullptr, h, y, nullptr,
                                                                                  rstd, N, C, ld, eps, aligned);
  WB_CHECK_LAUNCH();
}

}  // namespace ch06::solution
