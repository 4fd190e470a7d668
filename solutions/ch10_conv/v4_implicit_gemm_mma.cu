// v4 — v3's implicit GEMM on ldmatrix + mma.sync m16n8k16, fed by cp.async.
//
// What changed from v3:
//   * (128, 128) block tiles, 8 warps as 4 (pixels) x 2 (channels), each warp (32, 64):
//     2 x 8 mma tiles of 16 x 8, 64 FP32 accumulators per thread. Four times the MACs per
//     byte staged in shared memory.
//   * fragments come from shared memory through ldmatrix (harness/device/mma.cuh). Tile rows
//     are 40 BF16 = 80 bytes apart: the 8 row addresses of one ldmatrix matrix fall on 8
//     different groups of 4 banks, so the loads are conflict-free without a swizzle.
//   * the im2col copy is cp.async of 16 bytes (8 channels of one tap; C % 8 == 0), issued for
//     K step t + 1 before the MMAs of step t (two stages): the copies of the next step fly
//     while the tensor cores work. A tap in the padding, a pixel past M or a kk past Kg is the
//     same copy with src-size 0: zeros land in shared memory and nothing is read.
//   * each thread's two pixel rows of A are split into (n, h0, w0) once, before the loop;
//     per K step only the tap (r, s, c) of the thread's 8-column piece is computed.
//   * the epilogue works on the accumulator registers: d0, d1 of an mma tile are two
//     neighbouring channels of one pixel, stored as one bf16x2 (4 bytes) when K is even.
// C % 8 != 0 (an RGB stem, odd channel counts): no 16-byte copy lines up. The same kernel then
// fills each stage with plain loads, element by element (kVec = false): the same tiles, no
// overlap of copies and MMAs, still one kernel with the epilogue fused.
//
// From conv_common.cuh: the launch (the GEMM sizes, the grid, the instance for C:
// launch_implicit_gemm) and the folded BN epilogue.
//
// Run: ctest --preset ch10-solution -R conv2d_bn_relu/bf16/v4
//      build/ch10/bin/ch10_bench --benchmark_filter=conv2d_bn_relu
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/math.cuh"
#include "device/mma.cuh"
#include "runtime/errors.cuh"
#include "conv_common.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

constexpr int BM = 128, BN = 128, BK = 32, kStages = 2;
constexpr int kWarpsM = 4, kWarpsN = 2, kThreads = 32 * kWarpsM * kWarpsN;
constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;  // (32, 64) per warp
constexpr int MI = WM / 16, NI = WN / 8;             // 2 x 8 mma tiles of 16 x 8
constexpr int kLd = BK + 8;                          // 80-byte rows: ldmatrix without bank conflicts
constexpr int kPieces = BK / 8;                      // 16-byte pieces per tile row
constexpr int kRowsPerPass = kThreads / kPieces;     // 64 tile rows per pass of the block
static_assert(BM % kRowsPerPass == 0 && BN % kRowsPerPass == 0, "whole passes over the tiles");
static_assert(BM / kRowsPerPass == 2 && BN / kRowsPerPass == 2, "two rows of A and of B per thread");
static_assert(NI % 2 == 0, "B fragments come in pairs of n8 tiles (one ldmatrix.x4)");

struct Dims {
  ConvShape s;
  int P, Q, M, Kg;
};

// grid (ceil(M / BM), ceil(K / BN)), block (256). kVec: C % 8 == 0 (16-byte cp.async copies).
template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    implicit_gemm_mma_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                             const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d) {
  __shared__ __align__(128) bf16 sA[kStages][BM][kLd];  // (BM, BK) tiles of A: pixels x kk
  __shared__ __align__(128) bf16 sB[kStages][BN][kLd];  // (BN, BK) tiles of B, stored [k][kk]
  __shared__ Folded sF[BN];

  const ConvShape& s = d.s;
  const int m0 = blockIdx.x * BM, k0 = blockIdx.y * BN;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;
  if (tid < BN && k0 + tid < s.K) sF[tid] = fold_bn(bn, k0 + tid);

  // This thread's copies: rows tid / kPieces + j * kRowsPerPass (j = 0, 1) of each tile, the
  // 16-byte piece tid % kPieces of each row (conv_common.cuh).
  const Im2colCopies<2, 2, kRowsPerPass, kPieces> copies(s, d.P, d.Q, d.M, m0, tid);
  auto load_stage = [&](int stage, int kk0) {
    if constexpr (kVec) {
      copies.copy16(sA[stage], sB[stage], x, w, s, d.Kg, k0, kk0);
    } else {
      const int kk = kk0 + copies.piece * 8;  // this thread's 8 columns kk .. kk + 7 of A and of B
      for (int e = 0; e < 8; ++e) {
        const int col = kk + e;
        const bool k_ok = col < d.Kg;
        int r = 0, t = 0, c = 0;
        if (k_ok) copies.tap(s, col, r, t, c);
        for (int j = 0; j < 2; ++j) {
          const int row = copies.row0 + j * kRowsPerPass, k = k0 + row;
          const int h = copies.a_h0[j] + r, v = copies.a_w0[j] + t;
          const bool ok = copies.a_ok[j] && k_ok && h >= 0 && h < s.H && v >= 0 && v < s.W;
          sA[stage][row][copies.piece * 8 + e] =
              ok ? x[copies.a_img[j] + (int64_t(h) * s.W + v) * s.C + c] : __float2bfloat16(0.0f);
          sB[stage][row][copies.piece * 8 + e] =
              (k < s.K && k_ok) ? w[int64_t(k) * d.Kg + col] : __float2bfloat16(0.0f);
        }
      }
    }
  };

  float acc[MI][NI][4] = {};
  const int steps = wb::ceil_div(d.Kg, BK);
  load_stage(0, 0);
  wb::ptx::cp_async_commit();
  for (int t = 0; t < steps; ++t) {
    if (t + 1 < steps) {
      load_stage((t + 1) % kStages, (t + 1) * BK);  // that stage was last read in step t - 1
      wb::ptx::cp_async_commit();
      wb::ptx::cp_async_wait<1>();  // step t's copies have landed (this thread's)
    } else {
      wb::ptx::cp_async_wait<0>();
    }
    __syncthreads();  // ... and every thread's
    const int st = t % kStages;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      uint32_t a[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        // lanes 0-15: rows 0-15 at column ks; lanes 16-31: rows 0-15 at column ks + 8
        const bf16* p = &sA[st][wm * WM + i * 16 + lane % 16][ks + lane / 16 * 8];
        wb::ptx::ldmatrix_x4(a[i], wb::ptx::smem_u32(p));
      }
#pragma unroll
      for (int jj = 0; jj < NI / 2; ++jj) {
        // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
        uint32_t b[4];
        const bf16* p = &sB[st][wn * WN + jj * 16 + (lane & 7) + (lane >> 4) * 8][ks + ((lane >> 3) & 1) * 8];
        wb::ptx::ldmatrix_x4(b, wb::ptx::smem_u32(p));
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          wb::ptx::mma_16816<bf16>(acc[i][2 * jj], a[i], b[0], b[1]);
          wb::ptx::mma_16816<bf16>(acc[i][2 * jj + 1], a[i], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // the next step's copies overwrite the stage read in step t + 1 - kStages
  }

  // The epilogue on the registers: d0, d1 = (row g, channels 2q, 2q + 1), d2, d3 = row g + 8.
  const int g = lane / 4, q4 = lane % 4;
  const bool pairs = s.K % 2 == 0;  // y + m K + k is 4-byte aligned for even k
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m0 + wm * WM + i * 16 + g + half * 8;
      if (m >= d.M) continue;
#pragma unroll
      for (int jn = 0; jn < NI; ++jn) {
        const int col = wn * WN + jn * 8 + 2 * q4, k = k0 + col;
        if (k >= s.K) continue;
        const int64_t at = int64_t(m) * s.K + k;
        const float v0 = acc[i][jn][2 * half], v1 = acc[i][jn][2 * half + 1];
        if (pairs) {  // k + 1 < K too (K even, k even)
          float2 res = make_float2(0.0f, 0.0f);
          if (residual) res = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(residual + at));
          *reinterpret_cast<__nv_bfloat162*>(y + at) =
              __floats2bfloat162_rn(apply_epilogue(v0, sF[col], res.x), apply_epilogue(v1, sF[col + 1], res.y));
        } else {
          y[at] = __float2bfloat16(apply_epilogue(v0, sF[col], residual ? __bfloat162float(residual[at]) : 0.0f));
          if (k + 1 < s.K) {
            y[at + 1] =
                __float2bfloat16(apply_epilogue(v1, sF[col + 1], residual ? __bfloat162float(residual[at + 1]) : 0.0f));
          }
        }
      }
    }
  }
}

}  // namespace

void v4_implicit_gemm_mma(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                          cudaStream_t stream) {
  launch_implicit_gemm<BM, BN, kThreads, Dims>(implicit_gemm_mma_kernel<true>, implicit_gemm_mma_kernel<false>, x, w,
                                               bn, residual, y, s, stream);
}

}  // namespace ch10::solution
