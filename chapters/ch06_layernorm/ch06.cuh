// Chapter 6 — LayerNorm and RMSNorm, fused with the residual add: the interface between your
// kernels and the harness.
//
// You write the launchers declared in namespace ch06::student, one exercise per file:
//   ex1_layernorm_f32.cu         LayerNorm forward in FP32, two passes over the statistics
//   ex2_residual_layernorm.cu    h = x + r, then LayerNorm(h), BF16 in and out, one kernel
//   ex3_residual_rmsnorm.cu      h = x + r, then RMSNorm(h), BF16, one kernel
//   ex4_decode_warp_per_row.cu   exercise 2 again with ONE WARP PER ROW (the decode shape:
//                                a handful of rows, where a block per row would idle)
// Each launcher receives device pointers and a stream, computes its grid with a ceiling
// division, launches its kernel(s) on that stream and checks each launch.
//
// The data: N rows ("tokens") of C channels (the hidden size), row-major and PITCHED:
//
//   element (n, c) of x, r, h, y is at  p[n * ld + c]      0 <= n < N, 0 <= c < C, ld >= C
//   gamma[c], beta[c]                   C entries each, shared by every row
//   mean[n], rstd[n]                    one FP32 value per row
//
// The operations (every sum and every statistic in FP32, whatever the element type):
//
//   LayerNorm   mean = (1/C) sum_c x[c]
//               var  = (1/C) sum_c (x[c] - mean)^2          (biased: divide by C, not C - 1)
//               rstd = 1 / sqrt(var + eps)                  (rsqrtf is accurate enough)
//               y[c] = (x[c] - mean) * rstd * gamma[c] + beta[c]
//   RMSNorm     rstd = 1 / sqrt((1/C) sum_c h[c]^2 + eps)   (no mean is taken away)
//               y[c] = h[c] * rstd * gamma[c]               (no beta)
//   residual    h = bf16(x + r): the sum is computed in FP32 and rounded ONCE to BF16. h is
//               the new residual stream of the transformer: you must write it, and the
//               statistics and y are computed from h AS ROUNDED (read back your own BF16
//               value, not the FP32 sum), so that a later layer which reads h sees exactly
//               what this one normalised. y is rounded once to BF16.
//
// Rules the tests hold you to:
//   * any N >= 1; N == 0 means "launch nothing" (a grid of zero blocks is an error).
//     N * ld may pass 2^31 elements (a large case does): compute n * ld in 64 bits.
//   * any C >= 1: 1, 3, 127, 768, 769, 1000, 1024, 4096, 5120, 8192 and 12288 are tested.
//     C need not be a multiple of your vector width (8 BF16 or 4 floats in 16 bytes): the
//     last few elements of a row are yours to handle.
//   * pitched rows: ld >= C, and only the first C elements of each row of h and y are
//     written. The padding between rows belongs to someone else and must stay untouched.
//   * every pointer is 16-byte aligned, but a ROW starts 16-byte aligned only when
//     ld * sizeof(element) % 16 == 0. A 16-byte load at the start of row 1 when ld = 769
//     is a misaligned access: the kernel faults.
//   * the outputs (h, y, mean, rstd) do not overlap the inputs or each other.
//   * the inputs may have a LARGE MEAN AND A SMALL SPREAD: rows of mean 1000 and standard
//     deviation 1, rows of mean -1e4. The one-pass formula var = E[x^2] - E[x]^2 subtracts
//     two numbers near 10^6 (or 10^8) to get one near 1, and FP32 keeps only about 7
//     digits: it fails there. Take the mean first, then sum (x - mean)^2.
//   * every output is poisoned (NaN) before your launcher runs, and the guard bands around
//     it are checked afterwards.
//
// The tolerance grows with C (the statistics are sums of C terms) and allows one BF16
// rounding of h and of y; see the chapter's check for the exact numbers.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace ch06 {

using bf16 = __nv_bfloat16;

// The epsilon the tests and the benchmark pass as `eps`.
inline constexpr float kEps = 1e-5f;

// Rows are N, channels (hidden size) are C, every row starts `ld` elements after the
// previous one (ld >= C, pitched rows); gamma and beta have C entries.

// ex1: LayerNorm forward, FP32, two passes over the statistics (the mean, then the sum of
// (x - mean)^2): y = (x - mean) * rstd * gamma + beta with rstd = 1 / sqrt(var + eps) and
// var the biased (1/C) variance. Writes mean[N] and rstd[N] (FP32).
using LayerNormF32Fn = void(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                            int N, int C, int ld, float eps, cudaStream_t stream);

// ex2 (and ex4, the one-warp-per-row decode form): residual add fused with LayerNorm, BF16
// in and out, FP32 statistics:
//   h = bf16(x + r)   (the sum rounded once to BF16: the new residual stream, written to h),
//   then y = LayerNorm(h) computed from h AS ROUNDED, y rounded to BF16; writes mean[N] and
//   rstd[N].
using ResidualLayerNormFn = void(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                                 float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream);

// ex3: residual add fused with RMSNorm, BF16: h = bf16(x + r);
// y = h * rsqrt(mean(h^2) + eps) * gamma; writes rstd[N].
using ResidualRmsNormFn = void(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N,
                               int C, int ld, float eps, cudaStream_t stream);

namespace student {
LayerNormF32Fn layernorm_f32;
ResidualLayerNormFn residual_layernorm;
ResidualRmsNormFn residual_rmsnorm;
ResidualLayerNormFn residual_layernorm_warp;
}  // namespace student

}  // namespace ch06
