// v7 — v5 with 64-deep stages, addresses worked out once, and an epilogue staged in shared memory.
//
// What changes over v5 (same instructions: ldmatrix.x4, mma.sync.m16n8k16, cp.async; same
// 128 x 256 block tile of 8 warps, each a 64 x 64 warp tile with two fragment sets in flight):
//   * 64 along K per stage, 3 stages (144 KB): one __syncthreads() per 4 k steps of 16
//     instead of per 2. With one block of 8 warps per SM, every barrier stops the whole SM
//     at once, so fewer barriers is what this step is after. v5's 64-deep attempt spilled;
//     what made the room here is the next point.
//   * addresses worked out once, before the main loop. Every ldmatrix address is a per-lane
//     base plus a compile-time offset: the swizzle XOR of a k step (or of a 16-column group
//     of B) depends only on the lane, because the rows a lane reads are always the same
//     modulo 8 (xo[] below). Every cp.async source is a per-thread pointer plus k0, every
//     destination a per-thread shared offset plus a constant. The loop body is ldmatrix,
//     mma.sync and a handful of adds, which leaves the registers for the fragments.
//   * the epilogue goes through shared memory: the warps park their FP32 accumulators in
//     the (now idle) pipeline buffers, then every thread writes 16 contiguous bytes of D per
//     store (and reads C the same way), whole 32-byte sectors, instead of v5's 4-byte pairs.
//     With one block per SM the tensor cores wait for the epilogue, so its speed counts.
//   Shared layout (bytes; a 16-byte piece p of a row is stored at p ^ (row % 8)):
//       A stage: 128 rows of 64 elements (128 B, 8 pieces)      16 KB
//       B stage:  64 rows of 256 elements (512 B, 32 pieces)    32 KB
//   The 8 rows one ldmatrix phase reads are 8 consecutive rows at one piece: 8 bank groups.
// Edges as in v5: 16-byte copies with zero fill when K and N are multiples of 8 and A and B
// are 16-byte aligned, element by element into the same layout otherwise; the epilogue
// writes 16-byte vectors when N is a multiple of the vector and C and D are aligned, single
// elements otherwise, and nothing outside M x N.
// Shared memory: 144 KB per block. A GPU that cannot give a block that much (sm_86 and
// sm_89 stop at 99 KB) runs v5 instead (documented fallback; the tests cover it there).
// Expected: fewer stalls at barriers and fewer integer instructions between mma.syncs; the
// measured change comes from the benchmark run (docs/ch05-wmma.md).
//
// From mma_k64_common.cuh (shared with v8): the tiling constants, the copy plan and the tile
// copy, the main loop with its rotating stage addresses, and the launch (k64_launch: the v5
// fallback, the aligned or element-wise kernel); from harness/device/mma_pipeline.cuh (shared
// with v5): the block order and the tile products.
//
// Run: build/ch05/bin/ch05_bench --impl=v7_mma_sync_k64,v5_mma_sync,reference
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
using namespace wb::gemm;  // the tile order and tile products (harness/device/mma_pipeline.cuh)

using Tiling = K64Tiling<2, 256 + 8>;  // staged output rows: 8 floats of padding
// mma tiles per warp (unused when compiling for GPUs before sm_80):
[[maybe_unused]] constexpr int kMT = Tiling::kMT, kNT = Tiling::kNT;
static_assert(Tiling::kBK == 64 && Tiling::kKK == 4,
              "64 along K per stage: the swizzle offsets xo[kk] cover 4 k steps of 16");
static_assert(Tiling::kBN / 8 == 32, "the epilogue gives each warp one row of the tile per pass");

// 8 elements of Out (16 bytes for 16-bit types, 32 for FP32) to D, from FP32 values.
template <class Out>
__device__ __forceinline__ void store8(Out* d, const float (&v)[8]) {
  if constexpr (std::is_same_v<Out, float>) {
    reinterpret_cast<float4*>(d)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(d)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    uint4 u;
    uint32_t* w = reinterpret_cast<uint32_t*>(&u);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (std::is_same_v<Out, __half>) {
        const __half2 h = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
        w[e] = *reinterpret_cast<const uint32_t*>(&h);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * e], v[2 * e + 1]);
        w[e] = *reinterpret_cast<const uint32_t*>(&h);
      }
    }
    *reinterpret_cast<uint4*>(d) = u;
  }
}

// v[e] += C[e] for 8 elements of C, read as 16-byte vectors.
template <class Out>
__device__ __forceinline__ void add8(float (&v)[8], const Out* c) {
  if constexpr (std::is_same_v<Out, float>) {
    const float4 x = reinterpret_cast<const float4*>(c)[0], y = reinterpret_cast<const float4*>(c)[1];
    v[0] += x.x, v[1] += x.y, v[2] += x.z, v[3] += x.w, v[4] += y.x, v[5] += y.y, v[6] += y.z, v[7] += y.w;
  } else {
    const uint4 u = *reinterpret_cast<const uint4*>(c);
    const Out* h = reinterpret_cast<const Out*>(&u);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] += to_acc<float>(h[e]);
  }
}

template <class In, class Out, bool kAsync>
__global__ void __launch_bounds__(Tiling::kThreads, 1)
    k64_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char smem[];
  const auto [sA, sB, sA32, sB32, row0, col0, tid, lane, warp, wm, wn, tiles] = k64_block<Tiling>(smem, M, N, K);

  // --- copies: each thread owns piece pa of A rows ra + 32 i (i < 4) and piece pb of B rows
  // kb + 8 i (i < 8), at the same swizzled place in every stage (row % 8 is fixed: kb < 8).
  K64Copy<In> copy;
  k64_copy_plan<Tiling>(copy, A, B, M, N, K, row0, col0, tid, [](int kb) { return kb; });

  // The tile that starts at k0 into stage `s`.
  auto load_tile = [&](int s, int k0) {
    k64_load_tile<Tiling, kAsync>(copy, sA + s * Tiling::kAStage, sB + s * Tiling::kBStage, A, B, N, K, k0);
  };

  // --- fragments: lane l reads rows (l % 16) of a 16-row group at piece 2m + l / 16 (m = the
  // k step for A, the 16-column group for B); those rows are l % 8 modulo 8, so the stored
  // piece is (2m + l / 16) ^ (l % 8) = 2m ^ x: four offsets per lane (xo), fixed for the kernel.
  const auto [xo, a_ld] = k64_a_frag<Tiling>(lane, wm);                                // + i * 16 rows + xo[kk]
  const uint32_t b_ld = uint32_t((lane % 16) * Tiling::kBRow + wn * Tiling::kWN * 2);  // + kk * 16 rows + xo[j]

  // A: 16 x 16 tiles i (rows wm*64 + 16i ..) of step kk; B: 16 x 16 tiles j (columns wn*64 +
  // 16j ..), matrices 0-1 = b0, b1 of the 8 columns 16j.., matrices 2-3 of the next 8.
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

  // --- epilogue: accumulators into a (BM x kOutLd) FP32 tile. Lane (g, q) holds rows g and
  // g + 8, columns 2q, 2q + 1 of each 16 x 8 tile; the 8 floats of padding per row put the
  // 4 rows a half-warp writes 8 banks apart.
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

  // Each pass: warp w takes row w + 8 * pass, lane l columns 8l .. 8l + 7. Lanes 4-7 of each
  // quarter read their two float4 halves in the other order: no two lanes of a quarter-warp
  // hit the same banks.
  const bool vec = N % 8 == 0 && reinterpret_cast<uintptr_t>(D) % 16 == 0 &&
                   (C == nullptr || reinterpret_cast<uintptr_t>(C) % 16 == 0);
  const int half = (lane / 4) % 2;
#pragma unroll 4
  for (int r = warp; r < Tiling::kBM; r += Tiling::kThreads / 32) {
    const int gr = row0 + r, c = lane * 8, gc = col0 + c;
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

}  // namespace

CH05_LAUNCHER(v7_mma_sync_k64) {
  const bool aligned =
      K % 8 == 0 && N % 8 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 && reinterpret_cast<uintptr_t>(B) % 16 == 0;
  k64_launch<Tiling, &k64_kernel<In, Out, true>, &k64_kernel<In, Out, false>>(
      aligned, [&] { v5_mma_sync<In, Out>(M, N, K, A, B, C, D, stream); }, M, N, K, A, B, C, D, stream);
}

CH05_INSTANTIATE_16BIT(v7_mma_sync_k64);

}  // namespace ch05::solution
