// v13 — v8 in half-width blocks, two of them per SM: v12's change for INT8.
//
// What changes over v8 (same mma.sync.m16n8k32, same 64 x 64 warp tiles of INT32
// accumulators, same B fragments through ldmatrix.trans and byte permutes, same swizzles,
// 128-deep stages and copy plan):
//   * 128 x 128 block tiles of 4 warps instead of 128 x 256 of 8, 3 stages of 32 KB (96 KB),
//     __launch_bounds__(128, 2): two blocks share an SM.
//   * why (as for v12 over v7): Nsight Compute on v8 (4096^3 INT8, H200) shows one block of 8
//     warps per SM, 2 warps per scheduler, about 0.5 eligible per cycle, stalls on the busy
//     tensor pipe and on fixed-latency dependencies, and a __syncthreads() per 128-deep stage
//     that stops the whole SM. With two blocks per SM, one block's barrier, epilogue or
//     pipeline fill leaves the other block's warps issuing mma.syncs.
//   * the price: a third more L2 -> shared traffic per product than v8's 128 x 256 tile.
//   * each thread now copies 8 pieces of A (2 of each of 4 rows 32 apart) and 8 of B (rows 16
//     apart) per stage; the staged epilogue is v8's (a warp writes one row of 128 INT32 per
//     pass).
//   Shared layout (bytes; the 16-byte piece p of a row is stored at p ^ s(row)):
//       A stage: 128 rows of 128 (8 pieces), s(r) = r % 8                       16 KB
//       B stage: 128 rows of 128 (8 pieces),  s(k) = (k & 1) | ((k >> 1) & 6)   16 KB
// Edges as in v8 (16-byte copies with zero fill when K and N are multiples of 16 and A and B
// 16-byte aligned, element by element otherwise; 16-byte stores when N is a multiple of 4
// and C and D are aligned, single elements otherwise). Exact: integer products and sums.
// Shared memory: 96 KB per block; GPUs that cannot give a block that much run v4's INT8
// kernel instead.
// Expected: more eligible warps per scheduler than v8; the yardstick is cuBLASLt's IMMA
// (cublaslt_imma), the measured ratio comes from the benchmark run (docs/ch05-wmma.md).
//
// From mma_k64_common.cuh (shared with v7, v8, v12): the tiling constants, the copy plan and
// the tile copy, and the main loop with its rotating stage addresses; from harness/device/
// mma_pipeline.cuh: the block order and the launch.
//
// Run: build/ch05/bin/ch05_bench --op=gemm/i8_i32 --impl=reference,v8_mma_sync_int8,v13_mma_sync_int8_2cta
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
using namespace wb::gemm;  // the tile order and launch (harness/device/mma_pipeline.cuh)

// 128 x 128 tiles, 3 stages, 2 pieces of each row of A a thread copies; staged rows: 16 ints of padding
using Tiling = K64Tiling<1, 128 + 16, 128, 3, 2>;
constexpr int kBlocksPerSm = 2;
// mma tiles per warp (unused when compiling for GPUs before sm_80):
[[maybe_unused]] constexpr int kMT = Tiling::kMT, kNT = Tiling::kNT;
static_assert(Tiling::kThreads == 128 && Tiling::kBK == 128 && Tiling::kKK == 4,
              "4 warps; 128 along K per stage: 4 k steps of 32");
static_assert((Tiling::kBM * Tiling::kBN / 4) % Tiling::kThreads == 0, "whole 4-column pieces of D per thread");
static_assert(Tiling::kBStep % 16 == 0, "a thread's rows of B are the same modulo 16: one swizzle for all of them");
static_assert(kBlocksPerSm * Tiling::kSmem <= 227 * 1024, "two blocks' shared memory fit an sm_90 SM");

// The XOR of B's row k, as in v8: a bijection of {0,1,4,5,8,9,12,13} and of
// {2,3,6,7,10,11,14,15} onto 0..7, so the 8 rows of an ldmatrix phase of B fall into 8
// different bank groups.
__host__ __device__ constexpr int b_swizzle(int k) { return (k & 1) | ((k >> 1) & 6); }

template <bool kAsync>
__global__ void __launch_bounds__(Tiling::kThreads, kBlocksPerSm)
    int8_2cta_kernel(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* sA = smem;                                      // kStages x (BM x BK), swizzled
  unsigned char* sB = smem + Tiling::kStages * Tiling::kAStage;  // kStages x (BK x BN), swizzled
  const uint32_t sA32 = smem_u32(sA), sB32 = smem_u32(sB);

  // Block (bm, bn) in groups of kGroupM block rows, as in v5.
  const TileCorner tile = grouped_tile<Tiling::kBM, Tiling::kBN, Tiling::kGroupM>(M, N);
  const int row0 = tile.row0, col0 = tile.col0;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / Tiling::kWarpsN, wn = warp % Tiling::kWarpsN;
  const int tiles = (K + Tiling::kBK - 1) / Tiling::kBK;

  // --- copies: each thread owns pieces pa and pa + 4 of A rows ra + 32 i (i < 4) and piece
  // pb of B rows kb + 16 i (i < 8), at the same swizzled place in every stage (s() has
  // period 16). Two pieces of 4 rows rather than v12's one piece of 8 rows: the second piece
  // is the same row pointer + 64 bytes, which keeps this kernel's registers under 255.
  K64Copy<int8_t> copy;
  k64_copy_plan<Tiling>(copy, A, B, M, N, K, row0, col0, tid, b_swizzle);

  // The tile that starts at k0 into stage `s`.
  auto load_tile = [&](int s, int k0) {
    k64_load_tile<Tiling, kAsync>(copy, sA + s * Tiling::kAStage, sB + s * Tiling::kBStage, A, B, N, K, k0);
  };

  // --- fragments of A, as in v7: lane l reads row l % 16 of a 16-row group at piece
  // 2kk + l / 16, stored at (2kk) ^ x.
  const int x = (lane / 16) ^ (lane % 8);
  uint32_t xo[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) xo[m] = uint32_t((x ^ (2 * m)) << 4);
  const uint32_t a_ld = uint32_t((wm * Tiling::kWM + lane % 16) * Tiling::kARow);  // + i * 16 rows + xo[kk]

  // --- fragments of B: lane l gives the address of row p(l) of matrix l / 8 of k step kk:
  //   matrix 0: rows 4(i/2) + (i%2)      (i = l % 8)    -> k 4q, 4q+1 of the first 16
  //   matrix 1: rows 4(i/2) + 2 + (i%2)                   -> k 4q+2, 4q+3
  //   matrices 2, 3: the same, 16 rows further            -> the second 16 (b1)
  // all at the warp's 16-column group j. Their swizzle s(row) = l % 8. B's rows are now 8
  // pieces (one 128-byte line): the warp's groups are pieces 4 wn + j < 8.
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

  // Each pass: a warp takes one row of 128 columns, 4 per lane (512 bytes).
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

template <bool kAsync>
void launch(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D, cudaStream_t stream) {
  constexpr auto kKernel = &int8_2cta_kernel<kAsync>;
  // Two blocks need 2 x 97 KB of the SM's shared memory: ask for the largest carveout, so
  // that the driver does not pick a smaller one that holds a single block.
  [[maybe_unused]] static const bool carveout = [] {
    CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    int(cudaSharedmemCarveoutMaxShared)));
    return true;
  }();
  const long long blocks = (long long)((M + Tiling::kBM - 1) / Tiling::kBM) * ((N + Tiling::kBN - 1) / Tiling::kBN);
  launch_with_smem<kKernel>(static_cast<unsigned>(blocks), Tiling::kThreads, Tiling::kSmem, stream, M, N, K, A, B, C,
                            D);
}

}  // namespace

// INT8 only: the launcher template exists for the ladder's common signature.
CH05_LAUNCHER(v13_mma_sync_int8_2cta) {
  static_assert(std::is_same_v<In, int8_t> && std::is_same_v<Out, int32_t>, "v13 is an INT8 step");
  if (M <= 0 || N <= 0) return;
  static const bool fits = wb::query_device().smem_per_block_optin >= Tiling::kSmem;
  if (!fits) {
    v4_cp_async_pipeline<In, Out>(M, N, K, A, B, C, D, stream);
    return;
  }
  const bool aligned = K % 16 == 0 && N % 16 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(B) % 16 == 0;
  if (aligned) {
    launch<true>(M, N, K, A, B, C, D, stream);
  } else {
    launch<false>(M, N, K, A, B, C, D, stream);
  }
}

CH05_INSTANTIATE(v13_mma_sync_int8_2cta, int8_t, int32_t);

}  // namespace ch05::solution
