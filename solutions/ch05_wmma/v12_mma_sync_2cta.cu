// v12 — v7 in half-width blocks, two of them per SM: a barrier stops half the SM, not all of it.
//
// What changes over v7 (same instructions, same 64 x 64 warp tiles with two fragment sets in
// flight, same 64-deep stages, swizzles, copy plan and addresses worked out once):
//   * 128 x 128 block tiles of 4 warps (2 x 2) instead of 128 x 256 of 8 warps, 3 stages of
//     32 KB (96 KB), __launch_bounds__(128, 2): two blocks share an SM (2 x 128 threads x at
//     most 255 registers fit the 64K register file; 2 x 96 KB fit the 228 KB of an sm_90 SM).
//   * why: Nsight Compute on v7 (4096^3 BF16, H200): one block of 8 warps per SM, 2 warps per
//     scheduler, 0.48 of them eligible per cycle; the top stalls are the tensor pipe being
//     busy and fixed-latency dependencies, and the __syncthreads() once per 64-deep stage,
//     which with one block per SM stops every warp of the SM at once. With two blocks, one
//     block's barrier (or its epilogue, or its pipeline fill) leaves the other block's four
//     warps issuing mma.syncs, and the two blocks drift apart so that they rarely wait
//     together. Per warp nothing changes: the same ldmatrix and mma.sync stream.
//   * the price: a 128 x 128 tile reads 2 x 128 values of A and B per 128 x 128 products of
//     a k step, v7's 128 x 256 tile 384 per 128 x 256: a third more L2 -> shared traffic.
//   * each thread now copies 8 pieces of A (rows 16 apart) and 8 of B (rows 8 apart) per
//     stage, and the staged epilogue gives a warp two rows of the tile per pass (16 pieces
//     of 8 values per row) instead of one.
//   Shared layout (bytes; a 16-byte piece p of a row is stored at p ^ (row % 8)):
//       A stage: 128 rows of 64 elements (128 B, 8 pieces)      16 KB
//       B stage:  64 rows of 128 elements (256 B, 16 pieces)    16 KB
// Edges as in v7 (16-byte copies with zero fill when K and N are multiples of 8 and A and B
// are 16-byte aligned, element by element otherwise; 16-byte stores when N is a multiple of
// 8 and C and D are aligned, single elements otherwise; nothing outside M x N).
// Shared memory: 96 KB per block; a GPU that cannot give a block that much runs v5.
// Expected: more eligible warps per scheduler (4 resident) and fewer cycles with none; the
// measured change comes from the benchmark run (docs/ch05-wmma.md).
//
// From mma_k64_common.cuh (shared with v7, v8, v13): the tiling constants, the copy plan and
// the tile copy, the main loop with its rotating stage addresses, and the epilogue's 16-byte
// loads and stores; from harness/device/mma_pipeline.cuh: the block order, the tile products
// and the launch.
//
// Run: build/ch05/bin/ch05_bench --op=gemm/bf16_bf16 --impl=reference,v7_mma_sync_k64,v12_mma_sync_2cta
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
using namespace wb::gemm;  // the tile order, tile products and launch (harness/device/mma_pipeline.cuh)

using Tiling = K64Tiling<2, 128 + 8, 128, 3>;  // 128 x 128 tiles, 3 stages; 8 floats of padding per staged row
constexpr int kBlocksPerSm = 2;
// mma tiles per warp (unused when compiling for GPUs before sm_80):
[[maybe_unused]] constexpr int kMT = Tiling::kMT, kNT = Tiling::kNT;
static_assert(Tiling::kThreads == 128 && Tiling::kBK == 64 && Tiling::kKK == 4,
              "4 warps; 64 along K per stage: the swizzle offsets xo[kk] cover 4 k steps of 16");
static_assert(Tiling::kBStep % 8 == 0, "a thread's rows of B are the same modulo 8: one swizzle for all of them");
// The epilogue's pieces: 8 values of a staged row each, kPieces per row, a warp spans whole rows.
constexpr int kPieces = Tiling::kBN / 8, kRowsPerPass = Tiling::kThreads / kPieces;
static_assert(32 % kPieces == 0 && Tiling::kBM % kRowsPerPass == 0, "a warp covers whole rows of the staged tile");
static_assert(kBlocksPerSm * Tiling::kSmem <= 227 * 1024, "two blocks' shared memory fit an sm_90 SM");

template <class In, class Out, bool kAsync>
__global__ void __launch_bounds__(Tiling::kThreads, kBlocksPerSm)
    k64_2cta_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
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

  // --- copies: each thread owns piece pa of A rows ra + 16 i (i < 8) and piece pb of B rows
  // kb + 8 i (i < 8), at the same swizzled place in every stage (row % 8 is fixed: kb < 8).
  K64Copy<In> copy;
  k64_copy_plan<Tiling>(copy, A, B, M, N, K, row0, col0, tid, [](int kb) { return kb; });

  // The tile that starts at k0 into stage `s`.
  auto load_tile = [&](int s, int k0) {
    k64_load_tile<Tiling, kAsync>(copy, sA + s * Tiling::kAStage, sB + s * Tiling::kBStage, A, B, N, K, k0);
  };

  // --- fragments, as in v7: lane l reads rows (l % 16) of a 16-row group at piece 2m + l / 16
  // (m = the k step for A, the 16-column group for B), stored at 2m ^ x, x = (l / 16) ^ (l % 8).
  // B's rows are now 16 pieces; the warp's 64 columns start at piece 8 wn, a multiple of 8, so
  // the XOR (on the low 3 bits) stays inside them.
  const int x = (lane / 16) ^ (lane % 8);
  uint32_t xo[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) xo[m] = uint32_t((x ^ (2 * m)) << 4);
  const uint32_t a_ld = uint32_t((wm * Tiling::kWM + lane % 16) * Tiling::kARow);      // + i * 16 rows + xo[kk]
  const uint32_t b_ld = uint32_t((lane % 16) * Tiling::kBRow + wn * Tiling::kWN * 2);  // + kk * 16 rows + xo[j]

  auto load_frags = [&](uint32_t(&a)[kMT][4], uint32_t(&b)[kNT / 2][4], uint32_t a_stage, uint32_t b_stage, int kk) {
#pragma unroll
    for (int i = 0; i < kMT; ++i) ldmatrix_x4(a[i], a_stage + a_ld + i * 16 * Tiling::kARow + xo[kk]);
#pragma unroll
    for (int j = 0; j < kNT / 2; ++j) ldmatrix_x4_trans(b[j], b_stage + b_ld + kk * 16 * Tiling::kBRow + xo[j]);
  };

  float acc[kMT][kNT][4];
  zero_acc(acc);

  uint32_t af[2][kMT][4], bf[2][kNT / 2][4];
  k64_pipeline<Tiling>(
      tiles, sA32, sB32, af, bf, load_tile, load_frags,
      [&](const uint32_t(&a)[kMT][4], const uint32_t(&b)[kNT / 2][4]) { mma_tiles_16816<In>(acc, a, b); });

  // --- epilogue: accumulators into a (BM x kOutLd) FP32 tile, as in v7 (the padding puts the
  // 4 rows a half-warp writes 8 banks apart: 136 floats = 32 banks + 8).
  float* out = reinterpret_cast<float*>(smem);
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int i = 0; i < kMT; ++i) {
    const int r = wm * Tiling::kWM + i * 16 + g;
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      const int c = wn * Tiling::kWN + j * 8 + 2 * q;
      *reinterpret_cast<float2*>(out + r * Tiling::kOutLd + c) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(out + (r + 8) * Tiling::kOutLd + c) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
  }
  __syncthreads();

  // Each pass: thread t takes row t / 16 + 8 * pass (a warp: two rows), columns 8 (t % 16)
  // .. + 7. A quarter-warp stays in one row; as in v7, lanes 4-7 of each quarter read their
  // two float4 halves in the other order, so no two of its lanes hit the same banks.
  const bool vec = N % 8 == 0 && reinterpret_cast<uintptr_t>(D) % 16 == 0 &&
                   (C == nullptr || reinterpret_cast<uintptr_t>(C) % 16 == 0);
  const int half = (lane / 4) % 2;
  const int c = (tid % kPieces) * 8, gc = col0 + c;
#pragma unroll 4
  for (int r = tid / kPieces; r < Tiling::kBM; r += kRowsPerPass) {
    const int gr = row0 + r;
    if (gr >= M || gc >= N) continue;
    const float4* src = reinterpret_cast<const float4*>(out + r * Tiling::kOutLd + c);
    const float4 first = src[half], second = src[half ^ 1];
    const float4 lo = half ? second : first, hi = half ? first : second;
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const size_t at = size_t(gr) * N + gc;
    if (vec) {
      if (C != nullptr) add8(v, C + at);
      store8(D + at, v);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        if (gc + e < N) D[at + e] = to_out<Out>(C != nullptr ? v[e] + to_acc<float>(C[at + e]) : v[e]);
      }
    }
  }
#else
  __trap();  // not reached: mma.sync.m16n8k16 and cp.async need sm_80
#endif
}

template <class In, class Out, bool kAsync>
void launch(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  constexpr auto kKernel = &k64_2cta_kernel<In, Out, kAsync>;
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

CH05_LAUNCHER(v12_mma_sync_2cta) {
  if (M <= 0 || N <= 0) return;
  static const bool fits = wb::query_device().smem_per_block_optin >= Tiling::kSmem;
  if (!fits) {
    v5_mma_sync<In, Out>(M, N, K, A, B, C, D, stream);
    return;
  }
  const bool aligned =
      K % 8 == 0 && N % 8 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 && reinterpret_cast<uintptr_t>(B) % 16 == 0;
  if (aligned) {
    launch<In, Out, true>(M, N, K, A, B, C, D, stream);
  } else {
    launch<In, Out, false>(M, N, K, A, B, C, D, stream);
  }
}

CH05_INSTANTIATE_16BIT(v12_mma_sync_2cta);

}  // namespace ch05::solution
