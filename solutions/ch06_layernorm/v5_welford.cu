// v5 — the mean and the variance in ONE pass, safely: Welford per thread, Chan's merge
// across lanes and warps. The numerics lesson of the chapter; not the fastest step.
//
// What changes over v4: instead of a sum (-> mean) and then a sum of (h - mean)^2, each
// thread keeps a running triple (count n, mean m, M2 = sum of squared deviations from m)
// and updates it per element (Welford, 1962):
//
//   n += 1;  d = e - m;  m += d / n;  M2 += d * (e - m)
//
// and two triples merge exactly (Chan, Golub and LeVeque, 1979):
//
//   n = na + nb;  d = mb - ma;  m = ma + d * nb / n;  M2 = M2a + M2b + d^2 * na * nb / n
//
// The merge runs in the same xor butterfly as the sums (three shuffles per step instead
// of one), then once over the warp triples in shared memory. Neither formula subtracts two
// large numbers to get a small one, so a row of mean 1000 and spread 1 is as accurate as a
// row of mean 0: this is the one-pass algorithm that is safe, unlike E[x^2] - E[x]^2.
//
// Why the two-pass form of v4 stays the faster choice here: one pass only pays when the
// data would otherwise be read twice FROM MEMORY (a streaming statistic, a row too long to
// keep). v4 already holds the row in registers, so its second pass costs one FMA per
// element and reads no byte. Welford instead costs a division per element (or a
// reciprocal and two extra FMAs), a dependent chain through m, three shuffles per merge
// step instead of one, and three values in the shared exchange: more instructions and more
// registers for the same bytes. On a memory-bound kernel this mostly hides under the DRAM
// time at large N; it shows at small N (decode), where the latency of the reduction chain
// is the time. v6 therefore builds on v4, not on v5.
//
// Run: build/ch06/bin/ch06_bench --impl=v5_welford,v4_row_in_registers
#include "ladder.cuh"
#include "row_regs.cuh"

namespace ch06::solution {
namespace {

struct Moments {
  float n, mean, m2;
};

__device__ __forceinline__ Moments merge(const Moments& a, const Moments& b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;  // two empty triples (threads past the end of a short row)
  const float d = b.mean - a.mean;
  const float wb = b.n / n;  // b's share of the merged count
  return {n, fmaf(d, wb, a.mean), a.m2 + b.m2 + d * d * a.n * wb};
}

__device__ __forceinline__ Moments warp_merge(Moments v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const Moments o{__shfl_xor_sync(0xFFFFFFFFu, v.n, offset), __shfl_xor_sync(0xFFFFFFFFu, v.mean, offset),
                    __shfl_xor_sync(0xFFFFFFFFu, v.m2, offset)};
    // Merge in a fixed order (lower lane first) so both partners compute the same bits.
    v = (threadIdx.x & offset) ? merge(o, v) : merge(v, o);
  }
  return v;
}

// The warps' triples merged in warp order through shared memory (wb::block_fold,
// harness/device/reduce.cuh); a warp per row needs no exchange.
template <int kG>
__device__ __forceinline__ Moments block_merge(Moments v, Moments* exchange) {
  v = warp_merge(v);
  if constexpr (kG == 32) {
    return v;
  } else {
    return wb::block_fold<kG>(
        v, [](const Moments& a, const Moments& b) { return merge(a, b); }, exchange);
  }
}

template <int kG, int kRows, int kV, bool kVec>
__global__ void __launch_bounds__(kG* kRows) welford_kernel(const RowArgs<bf16> a) {
  static_assert(kRows == 1 || kG == 32, "several rows per block only with a warp per row");
  constexpr int kN = Pack<bf16>::kN;
  __shared__ Moments exchange[kG / 32];
  const int t = threadIdx.x % kG;
  const int n = blockIdx.x * kRows + threadIdx.x / kG;
  if (n >= a.N) return;

  Pack<bf16> v[kV], rv[kV];
  load_packs<bf16, kG, kV, kVec>(v, a.x, n, a.ld, a.C, t);
  load_packs<bf16, kG, kV, kVec>(rv, a.r, n, a.ld, a.C, t);
  add_residual(v, rv);
  store_packs<bf16, kG, kV, kVec>(v, a.h, n, a.ld, a.C, t);

  Moments s{0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    const int m = pack_len<bf16>(t + i * kG, a.C);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (k < m) {
        const float e = v[i].get(k);
        s.n += 1.0f;
        const float d = e - s.mean;
        s.mean += d / s.n;
        s.m2 = fmaf(d, e - s.mean, s.m2);
      }
    }
  }
  s = block_merge<kG>(s, exchange);
  const float mean = s.mean;
  const float rstd = rsqrtf(s.m2 / a.C + a.eps);

  Pack<bf16> g[kV], b[kV];
  load_packs<bf16, kG, kV, kVec>(g, a.gamma, 0, 0, a.C, t);
  load_packs<bf16, kG, kV, kVec>(b, a.beta, 0, 0, a.C, t);
  normalise<Norm::Layer>(v, g, b, mean, rstd);
  store_packs<bf16, kG, kV, kVec>(v, a.y, n, a.ld, a.C, t);
  if (t == 0) {
    a.mean[n] = mean;
    a.rstd[n] = rstd;
  }
}

}  // namespace

void v5_residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                           float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  const RowArgs<bf16> a{x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps};
  const bool vec = rows_aligned<bf16>(ld, {x, r, gamma, beta, h, y});
  const bool launched = with_bucket(ceil_div(C, Pack<bf16>::kN), vec, [&]<int kG, int kRows, int kV, bool kVec>() {
    welford_kernel<kG, kRows, kV, kVec><<<ceil_div(N, kRows), kG * kRows, 0, stream>>>(a);
    WB_CHECK_LAUNCH();
  });
  if (!launched) v2_residual_layernorm(x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps, stream);
}

}  // namespace ch06::solution
