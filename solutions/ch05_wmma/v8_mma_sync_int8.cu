// v8 — INT8 on mma.sync.m16n8k32: v7's pipeline for 8-bit inputs and INT32 accumulators.
//
// What changes over v4 (the last INT8 step, WMMA 16 x 16 x 16 with 64 x 32 warp tiles) and
// how it differs from v7 (the same pipeline for 16-bit inputs):
//   * mma.sync.m16n8k32.s8.s8.s32: a 16 x 8 tile 32 deep per instruction, 64 x 64 warp tiles
//     (4 x 8 of them, 128 INT32 accumulators per lane), 128 x 256 block tiles of 8 warps, 128
//     along K per stage (128-byte rows of A, as v7's 64 BF16 values), 3 cp.async stages
//     (144 KB), the barrier before the last k step of a tile, two fragment sets in flight,
//     addresses worked out once, and the epilogue staged in shared memory.
//   * A's fragments are byte for byte those of m16n8k16 (16 rows of 32 bytes): ldmatrix.x4
//     and v7's swizzle serve unchanged.
//   * B is row-major (k, n), but m16n8k32 wants 4 consecutive k values of one column in each
//     register, and ldmatrix transposes 16-bit elements only. So B goes through
//     ldmatrix.x4.trans anyway, each 16-bit element being a pair of adjacent columns, with the
//     8 row addresses of each matrix chosen so that a lane receives rows k = 4q, 4q+1 from one
//     matrix and 4q+2, 4q+3 from the next; two byte permutes (prmt) then give the lane all
//     four k values of column 2g and of column 2g + 1 (g = lane / 4, q = lane % 4):
//       R0 = [B(4q,2g) B(4q,2g+1) B(4q+1,2g) B(4q+1,2g+1)]   R1 = the same for rows 4q+2, 4q+3
//       column 2g   = prmt(R0, R1, 0x6420)      column 2g+1 = prmt(R0, R1, 0x7531)
//     One ldmatrix.x4.trans (16 columns, 32 deep) and four prmt feed two mma tiles. The mma
//     tiles' columns are thereby interleaved: in each 16-column group, tile "even" has column
//     n at 2n, tile "odd" at 2n + 1, so a lane's accumulators of the two tiles are 4
//     consecutive columns of D (4q .. 4q+3): one 16-byte store into the staged tile.
//   Shared layout (bytes; the 16-byte piece p of a row is stored at p ^ s(row)):
//       A stage: 128 rows of 128 (8 pieces), s(r) = r % 8                       16 KB
//       B stage: 128 rows of 256 (16 pieces), s(k) = (k & 1) | ((k >> 1) & 6)   32 KB
//   B's XOR differs from A's because an ldmatrix phase of B reads the rows {0,1,4,5,8,9,12,13}
//   (or {2,3,6,7,...}) of a 16-row group, not 8 consecutive ones: s() maps each of those sets
//   onto 8 different bank groups (and s(row of the phase) turns out to be lane % 8).
// Edges: 16-byte copies with zero fill when K and N are multiples of 16 and A and B 16-byte
// aligned, element by element into the same layout otherwise; the epilogue adds C in INT32,
// writes 16-byte vectors when N is a multiple of 4 and C and D are aligned, single elements
// otherwise, and nothing outside M x N. Exact: every product and sum is an integer.
// Shared memory: 144 KB per block; GPUs that cannot give a block that much run v4's INT8
// kernel instead (documented fallback).
// Expected: a far higher rate than v4 (WMMA INT8 with small warp tiles); the yardstick is
// cuBLASLt's IMMA (cublaslt_imma), the measured ratio comes from the benchmark run.
//
// From mma_k64_common.cuh (shared with v7): the tiling constants, the copy plan and the tile
// copy, the main loop with its rotating stage addresses, and the launch (k64_launch: the v4
// fallback, the aligned or element-wise kernel); from harness/device/mma_pipeline.cuh: the
// block order.
//
// Run: build/ch05/bin/ch05_bench --op=gemm/i8_i32 --impl=v8_mma_sync_int8,v4_cp_async_pipeline,reference
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "device/mma_pipeline.cuh"
#include "ladder.cuh"
#include "mma_k64_common.cuh"

namespace ch05::solution {
namespace {

using namespace wb::ptx;   // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)
using namespace wb::gemm;  // the tile order (harness/device/mma_pipeline.cuh)

using Tiling = K64Tiling<1, 256 + 16>;  // staged output rows: 16 ints of padding
// mma tiles per warp (unused when compiling for GPUs before sm_80):
[[maybe_unused]] constexpr int kMT = Tiling::kMT, kNT = Tiling::kNT;
static_assert(Tiling::kBK == 128 && Tiling::kKK == 4, "128 along K per stage: 4 k steps of 32");
static_assert((Tiling::kBM * Tiling::kBN / 4) % Tiling::kThreads == 0, "whole 4-column pieces of D per thread");

// The XOR of B's row k (see the header): a bijection of {0,1,4,5,8,9,12,13} and of
// {2,3,6,7,10,11,14,15} onto 0..7.
__host__ __device__ constexpr int b_swizzle(int k) { return (k & 1) | ((k >> 1) & 6); }
// Row i of matrix m (0 or 1) of an ldmatrix of B is 4(i/2) + 2m + i%2; its XOR is i, so the 8 rows of
// a phase (i = 0..7) fall into 8 different bank groups.
__host__ __device__ constexpr bool b_phase_rows_spread() {
  for (int m = 0; m < 2; ++m)
    for (int i = 0; i < 8; ++i)
      if (b_swizzle(4 * (i / 2) + 2 * m + i % 2) != i) return false;
  return true;
}
static_assert(b_phase_rows_spread(), "the rows one ldmatrix phase of B reads land in 8 different bank groups");

template <bool kAsync>
__global__ void __launch_bounds__(Tiling::kThreads, 1)
    int8_kernel(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char smem[];
  const auto [sA, sB, sA32, sB32, row0, col0, tid, lane, warp, wm, wn, tiles] = k64_block<Tiling>(smem, M, N, K);

  // --- copies: each thread owns piece pa of A rows ra + 32 i (i < 4) and piece pb of B rows
  // kb + 16 i (i < 8), at the same swizzled place in every stage (s() has period 16).
  K64Copy<int8_t> copy;
  k64_copy_plan<Tiling>(copy, A, B, M, N, K, row0, col0, tid, b_swizzle);

  // The tile that starts at k0 into stage `s`.
  auto load_tile = [&](int s, int k0) {
    k64_load_tile<Tiling, kAsync>(copy, sA + s * Tiling::kAStage, sB + s * Tiling::kBStage, A, B, N, K, k0);
  };

  // --- fragments of A, as in v7: lane l reads row l % 16 of a 16-row group at piece
  // 2kk + l / 16, stored at (2kk) ^ x.
  const auto [xo, a_ld] = k64_a_frag<Tiling>(lane, wm);  // + i * 16 rows + xo[kk]

  // --- fragments of B: lane l gives the address of row p(l) of matrix l / 8 of k step kk:
  //   matrix 0: rows 4(i/2) + (i%2)      (i = l % 8)    -> k 4q, 4q+1 of the first 16
  //   matrix 1: rows 4(i/2) + 2 + (i%2)                   -> k 4q+2, 4q+3
  //   matrices 2, 3: the same, 16 rows further            -> the second 16 (b1)
  // all at the warp's 16-column group j. Their swizzle s(row) = l % 8.
  const int bi = lane % 8;
  const uint32_t b_ld = uint32_t(((lane / 16) * 16 + 4 * (bi / 2) + 2 * ((lane / 8) % 2) + bi % 2) * Tiling::kBRow);
  uint32_t bo[4];  // + kk * 32 rows + bo[j]
#pragma unroll
  for (int j = 0; j < 4; ++j) bo[j] = uint32_t(((wn * 4 + j) ^ bi) << 4);

  auto load_frags = [&](uint32_t(&a)[kMT][4], uint32_t(&b)[kNT / 2][4], uint32_t a_stage, uint32_t b_stage, int kk) {
#pragma unroll
    for (int i = 0; i < kMT; ++i) ldmatrix_x4(a[i], a_stage + a_ld + i * 16 * Tiling::kARow + xo[kk]);
#pragma unroll
    for (int j = 0; j < kNT / 2; ++j) {
      uint32_t r[4];
      ldmatrix_x4_trans(r, b_stage + b_ld + kk * 32 * Tiling::kBRow + bo[j]);
      b[j][0] = __byte_perm(r[0], r[1], 0x6420);  // b0 of the even tile (column 2g)
      b[j][1] = __byte_perm(r[2], r[3], 0x6420);  // b1 of the even tile
      b[j][2] = __byte_perm(r[0], r[1], 0x7531);  // b0 of the odd tile (column 2g + 1)
      b[j][3] = __byte_perm(r[2], r[3], 0x7531);  // b1 of the odd tile
    }
  };

  int acc[kMT][kNT][4];  // n tile 2j: columns 16j + 2n of the warp tile; 2j + 1: 16j + 2n + 1
  zero_acc(acc);

  uint32_t af[2][kMT][4], bf[2][kNT / 2][4];  // bf[.][j]: b0, b1 of n tile 2j, then of 2j + 1
  k64_pipeline<Tiling>(tiles, sA32, sB32, af, bf, load_tile, load_frags,
                       [&](const uint32_t(&a)[kMT][4], const uint32_t(&bs)[kNT / 2][4]) {
#pragma unroll
                         for (int j = 0; j < kNT / 2; ++j) {
                           const uint32_t(&b)[4] = bs[j];
#pragma unroll
                           for (int i = 0; i < kMT; ++i) {
                             mma_16832_s8(acc[i][2 * j], a[i], b[0], b[1]);
                             mma_16832_s8(acc[i][2 * j + 1], a[i], b[2], b[3]);
                           }
                         }
                       });

  // --- epilogue: accumulators into a (BM x kOutLd) INT32 tile. Lane (g, q) holds, of each
  // 16-column group j, rows g and g + 8 at columns 4q .. 4q+3 (even, odd, even, odd tile);
  // the 16 ints of padding per row put the two rows a quarter-warp writes 16 banks apart.
  int* out = reinterpret_cast<int*>(smem);
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int i = 0; i < kMT; ++i) {
    const int r = wm * Tiling::kWM + i * 16 + g;
#pragma unroll
    for (int j = 0; j < kNT / 2; ++j) {
      const int c = wn * Tiling::kWN + j * 16 + 4 * q;
      const int(&e)[4] = acc[i][2 * j];
      const int(&o)[4] = acc[i][2 * j + 1];
      *reinterpret_cast<int4*>(out + r * Tiling::kOutLd + c) = make_int4(e[0], o[0], e[1], o[1]);
      *reinterpret_cast<int4*>(out + (r + 8) * Tiling::kOutLd + c) = make_int4(e[2], o[2], e[3], o[3]);
    }
  }
  __syncthreads();

  // Each pass: a warp takes 128 consecutive columns of one row, 4 per lane (512 bytes).
  const bool vec = N % 4 == 0 && reinterpret_cast<uintptr_t>(D) % 16 == 0 &&
                   (C == nullptr || reinterpret_cast<uintptr_t>(C) % 16 == 0);
#pragma unroll 4
  for (int it = 0; it < Tiling::kBM * Tiling::kBN / 4 / Tiling::kThreads; ++it) {
    const int e = tid + it * Tiling::kThreads, r = e / (Tiling::kBN / 4), c = (e % (Tiling::kBN / 4)) * 4;
    const int gr = row0 + r, gc = col0 + c;
    if (gr >= M || gc >= N) continue;
    int4 v = *reinterpret_cast<const int4*>(out + r * Tiling::kOutLd + c);
    const size_t at = size_t(gr) * N + gc;
    if (vec) {
      if (C != nullptr) {
        const int4 cv = *reinterpret_cast<const int4*>(C + at);
        v.x += cv.x, v.y += cv.y, v.z += cv.z, v.w += cv.w;
      }
      *reinterpret_cast<int4*>(D + at) = v;
    } else {
      const int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (gc + u < N) D[at + u] = C != nullptr ? w[u] + C[at + u] : w[u];
      }
    }
  }
#else
  __trap();  // not reached: mma.sync.m16n8k32 and cp.async need sm_80
#endif
}

}  // namespace

// INT8 only: the launcher template exists for the ladder's common signature.
CH05_LAUNCHER(v8_mma_sync_int8) {
  static_assert(std::is_same_v<In, int8_t> && std::is_same_v<Out, int32_t>, "v8 is the INT8 step");
  const bool aligned = K % 16 == 0 && N % 16 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(B) % 16 == 0;
  k64_launch<Tiling, &int8_kernel<true>, &int8_kernel<false>>(
      aligned, [&] { v4_cp_async_pipeline<In, Out>(M, N, K, A, B, C, D, stream); }, M, N, K, A, B, C, D, stream);
}

CH05_INSTANTIATE(v8_mma_sync_int8, int8_t, int32_t);

}  // namespace ch05::solution
