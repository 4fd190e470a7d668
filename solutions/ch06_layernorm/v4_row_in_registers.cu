// v4 — the row held in registers: one trip through DRAM per byte, 16-byte accesses, and
// the statistics as two passes over registers.
//
// What changes over v3 (and v2):
//   * each thread loads its share of the row ONCE, as 16-byte packs (8 BF16 in a uint4),
//     all packs of x and of r issued back to back before the first is used; h is formed,
//     rounded, stored, and KEPT in registers. The mean and the sum of (h - mean)^2 are two
//     passes over those registers, and y is computed from them: h is never read back;
//   * the group that owns a row follows its length (row_regs.cuh): a warp per row up to
//     1024 BF16 (four rows per block, no barrier), a block of 64 to 1024 threads beyond,
//     so that every thread holds at most kV = 4 packs, a compile-time count: the register
//     array is indexed by unrolled constants, never by a runtime index;
//   * a block's sum is five shuffles per warp and ONE exchange of warp totals through
//     shared memory (one barrier), instead of v2's eight-barrier tree;
//   * C % 8 != 0: the last pack of a row is partial and goes element by element; rows that
//     start misaligned (ld % 8 != 0) go element by element throughout, into the same
//     registers (template flag kVec); rows longer than 32768 BF16 go to v2's kernel.
//
//   thread t (of kG):   regs: [ pack t | pack t+kG | pack t+2kG | pack t+3kG ]   (4 x 16 B of h)
//                        sum -> warp shuffles -> smem[warp] -> barrier -> every thread: mean
//                        sum (h - mean)^2 over the same registers -> ... -> rstd
//                        y from the registers, gamma and beta (16-byte loads, L2-resident)
//
// Why it is faster: DRAM now sees exactly the fused minimum, 2 bytes x 4 per element (read
// x and r, write h and y) plus gamma, beta once and 8 bytes per row of statistics; v2 and
// v3 also read h back twice, which costs L2 bandwidth and latency on the critical path of
// every row. Two passes over registers cost a few FMAs per element, nothing next to the
// memory time, and keep the numerically safe form (mean first).
//
// From norm_common.cuh: store_stats (the row's mean and rstd out). From row_regs.cuh: the
// pack loads and stores, the bucket (with_row_bucket), load_params (gamma and beta),
// write_row (y and the statistics out) and CH06_ROW_STEP (the three ops, v2 for long rows).
//
// Run: build/ch06/bin/ch06_bench --impl=v4_row_in_registers,v3_warp_shuffle
#include "ladder.cuh"
#include "row_regs.cuh"

namespace ch06::solution {
namespace {

template <class T, Norm kNorm, bool kResidual, int kG, int kRows, int kV, bool kVec>
__global__ void __launch_bounds__(kG* kRows) regs_kernel(const RowArgs<T> a) {
  static_assert(kRows == 1 || kG == 32, "several rows per block only with a warp per row");
  __shared__ float exchange[2][kG / 32];  // (2 sums, warps of the row) warp totals
  const int t = threadIdx.x % kG;
  const int n = blockIdx.x * kRows + threadIdx.x / kG;
  if (n >= a.N) return;  // only a warp-per-row warp can be here, and it has no barrier

  Pack<T> v[kV];  // x, then h (this thread's share of the row)
  load_packs<T, kG, kV, kVec>(v, a.x, n, a.ld, a.C, t);
  if constexpr (kResidual) {
    Pack<T> rv[kV];
    load_packs<T, kG, kV, kVec>(rv, a.r, n, a.ld, a.C, t);
    add_residual(v, rv);
    store_packs<T, kG, kV, kVec>(v, a.h, n, a.ld, a.C, t);
  }

  float mean = 0.0f, rstd;
  const float s1 = block_sum<kG>(first_moment<kNorm>(v), exchange[0]);
  if constexpr (kNorm == Norm::Layer) {
    mean = s1 / a.C;
    const float s2 = block_sum<kG>(centred_square_sum<T, kG>(v, mean, a.C, t), exchange[1]);
    rstd = rsqrtf(s2 / a.C + a.eps);
  } else {
    rstd = rsqrtf(s1 / a.C + a.eps);
  }

  Pack<T> g[kV], b[kV];
  load_params<T, kNorm, kG, kV, kVec>(g, b, a, t);
  write_row<T, kNorm, kG, kV, kVec>(v, g, b, mean, rstd, a, n, t);
}

// Picks the bucket for C; returns false (launching nothing) when the row is too long.
template <class T, Norm kNorm, bool kResidual>
bool launch_regs(const RowArgs<T>& a, cudaStream_t stream) {
  return with_row_bucket(a, [&]<int kG, int kRows, int kV, bool kVec>() {
    regs_kernel<T, kNorm, kResidual, kG, kRows, kV, kVec><<<ceil_div(a.N, kRows), kG * kRows, 0, stream>>>(a);
    WB_CHECK_LAUNCH();
  });
}

}  // namespace

CH06_ROW_STEP(v4, launch_regs)

}  // namespace ch06::solution
