// v6 — persistent blocks: v4's row-in-registers kernel with a grid sized to the GPU, gamma
// and beta loaded once per thread for the whole run, and the next row's loads in flight
// while this row is reduced and written.
//
// What changes over v4:
//   * the grid is resident (SMs x blocks per SM, from the occupancy calculator), not one
//     block per row: each block (or each warp, for short rows) walks the rows
//     n, n + G, n + 2G, ... (G = the number of row groups in the grid);
//   * a thread owns the same columns in every row (packs t, t + kG, ...), so its slices of
//     gamma and beta are loaded ONCE into registers and serve every row; v4 reloads them
//     (from L2) for every row;
//   * software pipelining: right after h of row n is formed, the loads of x and r for the
//     row after are issued, so they are on their way while row n is summed, normalised and
//     stored. v4 has nothing in flight during its reductions except other blocks' loads:
//
//       v4 (one block):  [load n][sum][sum][store n]              [load n'][sum]...
//       v6 (one block):  [load n][sum][sum][store n]
//                                [load n+G ......... ][sum][sum][store n+G]
//                                                      [load n+2G ....... ]
//   * the shared-memory exchanges alternate between two buffers (phase), so consecutive
//     sums, also across rows, never need a second barrier.
//
// Why it is faster: fewer instructions per row (no gamma/beta loads, no block launch and
// retirement per row), and more bytes in flight per thread at the same occupancy, which
// matters most where the blocks are few or short-lived (C = 1024: a warp per row would
// otherwise finish its 2 KB in a few hundred nanoseconds and leave). For the widest rows
// (kG >= 512) the registers for a second row are not there, and v6 runs like v4 with
// gamma and beta kept; at kG = 1024 (64 registers a thread) not even those. Rows longer than 32768 BF16 go to v2's
// kernel, as in v4.
//
// From norm_common.cuh: store_stats (the row's mean and rstd out). From row_regs.cuh: the
// pack loads and stores, the bucket (with_row_bucket), load_params (gamma and beta),
// write_row (y and the statistics out) and CH06_ROW_STEP (the three ops, v2 for long rows).
//
// Run: build/ch06/bin/ch06_bench --impl=v6_persistent,v4_row_in_registers,cudnn
#include "ladder.cuh"
#include "row_regs.cuh"

namespace ch06::solution {
namespace {

template <class T, Norm kNorm, bool kResidual, int kG, int kRows, int kV, bool kVec>
__global__ void __launch_bounds__(kG* kRows) persistent_kernel(const RowArgs<T> a) {
  static_assert(kRows == 1 || kG == 32, "several rows per block only with a warp per row");
  constexpr bool kPrefetch = kG * kRows <= 256;    // registers for a second row's x and r
  constexpr bool kKeepParams = kG * kRows <= 512;  // registers for gamma and beta (<= 64 at 1024)
  __shared__ float exchange[2][kG / 32];           // (2 alternating buffers, warps of the row)
  const int t = threadIdx.x % kG;
  const int stride = gridDim.x * kRows;  // row groups in the grid
  int n = blockIdx.x * kRows + threadIdx.x / kG;
  if (n >= a.N) return;  // a warp-per-row warp without rows (block path: the grid is <= N)

  Pack<T> g[kV], b[kV];  // this thread's columns of gamma and beta, for every row
  if constexpr (kKeepParams) load_params<T, kNorm, kG, kV, kVec>(g, b, a, t);

  Pack<T> xn[kV], rn[kV];  // the next row's x and r, loaded ahead
  if constexpr (kPrefetch) {
    load_packs<T, kG, kV, kVec>(xn, a.x, n, a.ld, a.C, t);
    if constexpr (kResidual) load_packs<T, kG, kV, kVec>(rn, a.r, n, a.ld, a.C, t);
  }
  int phase = 0;
  for (; n < a.N; n += stride) {
    Pack<T> v[kV];
    if constexpr (kPrefetch) {
#pragma unroll
      for (int i = 0; i < kV; ++i) v[i] = xn[i];
      if constexpr (kResidual) add_residual(v, rn);
      if (n + stride < a.N) {  // issue the next row's loads now; they land during the sums
        load_packs<T, kG, kV, kVec>(xn, a.x, n + stride, a.ld, a.C, t);
        if constexpr (kResidual) load_packs<T, kG, kV, kVec>(rn, a.r, n + stride, a.ld, a.C, t);
      }
    } else {
      load_packs<T, kG, kV, kVec>(v, a.x, n, a.ld, a.C, t);
      if constexpr (kResidual) {
        load_packs<T, kG, kV, kVec>(rn, a.r, n, a.ld, a.C, t);
        add_residual(v, rn);
      }
    }
    if constexpr (kResidual) store_packs<T, kG, kV, kVec>(v, a.h, n, a.ld, a.C, t);

    float mean = 0.0f, rstd;
    const float s1 = block_sum<kG>(first_moment<kNorm>(v), exchange[phase]);
    phase ^= 1;
    if constexpr (kNorm == Norm::Layer) {
      mean = s1 / a.C;
      const float s2 = block_sum<kG>(centred_square_sum<T, kG>(v, mean, a.C, t), exchange[phase]);
      phase ^= 1;
      rstd = rsqrtf(s2 / a.C + a.eps);
    } else {
      rstd = rsqrtf(s1 / a.C + a.eps);
    }
    if constexpr (!kKeepParams) {  // 1024 threads: reloaded per row (from L2), as in v4
      load_params<T, kNorm, kG, kV, kVec>(g, b, a, t);
    }
    write_row<T, kNorm, kG, kV, kVec>(v, g, b, mean, rstd, a, n, t);
  }
}

template <class T, Norm kNorm, bool kResidual>
bool launch_persistent(const RowArgs<T>& a, cudaStream_t stream) {
  return with_row_bucket(a, [&]<int kG, int kRows, int kV, bool kVec>() {
    constexpr auto kernel = persistent_kernel<T, kNorm, kResidual, kG, kRows, kV, kVec>;
    static const int resident = resident_blocks(kernel, kG * kRows);  // once per instantiation
    const int blocks = std::min(ceil_div(a.N, kRows), resident);
    kernel<<<blocks, kG * kRows, 0, stream>>>(a);
    WB_CHECK_LAUNCH();
  });
}

}  // namespace

CH06_ROW_STEP(v6, launch_persistent)

}  // namespace ch06::solution
