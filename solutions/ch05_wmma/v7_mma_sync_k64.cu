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
// Run: build/ch05/bin/ch05_bench --impl=v7_mma_sync_k64,v5_mma_sync,reference
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "ladder.cuh"

namespace ch05::solution {
namespace {

using namespace wb::ptx;  // cp.async, ldmatrix, mma.sync (harness/device/async_copy.cuh, mma.cuh)

constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 3;
constexpr int kWarpsM = 2, kWarpsN = 4, kThreads = kWarpsM * kWarpsN * 32;
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // 64 x 64 warp tile
// mma tiles per warp, k steps per stage (unused when compiling for GPUs before sm_80):
[[maybe_unused]] constexpr int kMT = kWM / 16, kNT = kWN / 8, kKK = kBK / 16;
constexpr int kARow = kBK * 2, kBRow = kBN * 2;              // bytes per row of a stage
constexpr int kAStage = kBM * kARow, kBStage = kBK * kBRow;  // 16 KB, 32 KB
constexpr int kPipe = kStages * (kAStage + kBStage);         // 144 KB
constexpr int kOutLd = kBN + 8;                              // floats per staged output row
constexpr int kOutBytes = kBM * kOutLd * 4;                  // the staged output tile (reuses the pipeline)
constexpr int kSmem = kPipe > kOutBytes ? kPipe : kOutBytes;
[[maybe_unused]] constexpr int kGroupM = 8;  // block rows launched together
static_assert(kARow == 128, "rows of A are one 128-byte line: the XOR with row % 8 covers all 8 pieces");
static_assert(kBRow % 128 == 0, "rows of B are whole 128-byte lines");
static_assert(kWM == 64 && kWN == 64, "the xo[] table below covers 4 m tiles, 4 k steps and 4 column pairs");
static_assert(kKK == 4, "the swizzle offsets xo[kk] cover 4 k steps of 16");
static_assert(kBM * (kARow / 16) == 4 * kThreads && kBK * (kBRow / 16) == 8 * kThreads, "4 A and 8 B pieces each");
static_assert(kBN / 8 == 32, "the epilogue gives each warp one row of the tile per pass");

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
__global__ void __launch_bounds__(kThreads, 1)
    k64_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* sA = smem;                      // kStages x (BM x BK), swizzled
  unsigned char* sB = smem + kStages * kAStage;  // kStages x (BK x BN), swizzled
  const uint32_t sA32 = smem_u32(sA), sB32 = smem_u32(sB);

  // Block (bm, bn) in groups of kGroupM block rows, as in v5.
  const int tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  const int per_group = kGroupM * tiles_n, group = blockIdx.x / per_group;
  const int first_m = group * kGroupM, group_rows = min(tiles_m - first_m, kGroupM);
  const int bm = first_m + (blockIdx.x % per_group) % group_rows, bn = (blockIdx.x % per_group) / group_rows;
  const int row0 = bm * kBM, col0 = bn * kBN;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;
  const int tiles = (K + kBK - 1) / kBK;

  // --- copies: each thread owns piece pa of A rows ra + 32 i (i < 4) and piece pb of B rows
  // kb + 8 i (i < 8), at the same swizzled place in every stage (row % 8 is fixed).
  const int pa = tid % 8, ra = tid / 8, pb = tid % 32, kb = tid / 32;
  const int a_dst = ra * kARow + ((pa ^ (ra % 8)) << 4);  // + i * 32 rows
  const int b_dst = kb * kBRow + ((pb ^ kb) << 4);        // + i * 8 rows (kb < 8)
  const size_t a_rows32 = size_t(32) * K;                 // 32 rows of A, in elements
  const In* a_src = A + size_t(row0 + ra) * K + pa * 8;   // row ra at k = 0 (dereferenced only inside A)
  const In* b_src = B + size_t(kb) * N + col0 + pb * 8;   // row kb at k = 0 (dereferenced only inside B)
  unsigned a_rows_in = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) a_rows_in |= unsigned(row0 + ra + 32 * i < M) << i;
  const bool b_col_in = col0 + pb * 8 < N;

  // The tile that starts at k0 into stage `s`.
  auto load_tile = [&](int s, int k0) {
    unsigned char* da = sA + s * kAStage + a_dst;
    unsigned char* db = sB + s * kBStage + b_dst;
    const int ka = k0 + pa * 8;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const bool row_in = (a_rows_in >> i) & 1u;
      const In* src = a_src + i * a_rows32 + k0;
      if constexpr (kAsync) {
        const bool in = row_in && ka < K;
        cp_async_16(da + i * 32 * kARow, in ? src : A, in);
      } else {
        In* d = reinterpret_cast<In*>(da + i * 32 * kARow);
#pragma unroll
        for (int e = 0; e < 8; ++e) d[e] = (row_in && ka + e < K) ? src[e] : zero<In>();
      }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int k = k0 + kb + 8 * i;
      const In* src = b_src + size_t(k0 + 8 * i) * N;
      if constexpr (kAsync) {
        const bool in = b_col_in && k < K;
        cp_async_16(db + i * 8 * kBRow, in ? src : B, in);
      } else {
        In* d = reinterpret_cast<In*>(db + i * 8 * kBRow);
        const int c = col0 + pb * 8;
#pragma unroll
        for (int e = 0; e < 8; ++e) d[e] = (k < K && c + e < N) ? src[e] : zero<In>();
      }
    }
  };

  // --- fragments: lane l reads rows (l % 16) of a 16-row group at piece 2m + l / 16 (m = the
  // k step for A, the 16-column group for B); those rows are l % 8 modulo 8, so the stored
  // piece is (2m + l / 16) ^ (l % 8) = 2m ^ x: four offsets per lane, fixed for the kernel.
  const int x = (lane / 16) ^ (lane % 8);
  uint32_t xo[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) xo[m] = uint32_t((x ^ (2 * m)) << 4);
  const uint32_t a_ld = uint32_t((wm * kWM + lane % 16) * kARow);      // + i * 16 rows + xo[kk]
  const uint32_t b_ld = uint32_t((lane % 16) * kBRow + wn * kWN * 2);  // + kk * 16 rows + xo[j]

  // A: 16 x 16 tiles i (rows wm*64 + 16i ..) of step kk; B: 16 x 16 tiles j (columns wn*64 +
  // 16j ..), matrices 0-1 = b0, b1 of the 8 columns 16j.., matrices 2-3 of the next 8.
  auto load_frags = [&](uint32_t(&a)[kMT][4], uint32_t(&b)[kNT / 2][4], uint32_t a_stage, uint32_t b_stage, int kk) {
#pragma unroll
    for (int i = 0; i < kMT; ++i) ldmatrix_x4(a[i], a_stage + a_ld + i * 16 * kARow + xo[kk]);
#pragma unroll
    for (int j = 0; j < kNT / 2; ++j) ldmatrix_x4_trans(b[j], b_stage + b_ld + kk * 16 * kBRow + xo[j]);
  };

  float acc[kMT][kNT][4];
#pragma unroll
  for (int i = 0; i < kMT; ++i) {
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    }
  }

  // Fill every stage (one commit group each, empty past the end); wait for tile 0.
#pragma unroll
  for (int s = 0; s < kStages; ++s) {
    if (s < tiles) load_tile(s, s * kBK);
    cp_async_commit();
  }
  cp_async_wait<kStages - 1>();
  __syncthreads();

  int rd = 0;  // the stage of tile t
  uint32_t a_rd = sA32, b_rd = sB32;
  uint32_t af[2][kMT][4], bf[2][kNT / 2][4];
  load_frags(af[0], bf[0], a_rd, b_rd, 0);

  for (int t = 0; t < tiles; ++t) {
#pragma unroll
    for (int kk = 0; kk < kKK; ++kk) {
      if (kk == kKK - 1) {
        // Tile t's last fragments were read at kk - 1: after the barrier its stage takes tile
        // t + kStages. Groups committed so far: kStages + t; tile t + 1 (group t + 1) must be
        // in, so at most kStages - 2 may still fly.
        cp_async_wait<kStages - 2>();
        __syncthreads();
        if (t + kStages < tiles) load_tile(rd, (t + kStages) * kBK);
        cp_async_commit();
        rd = rd + 1 == kStages ? 0 : rd + 1;
        a_rd = sA32 + rd * kAStage;
        b_rd = sB32 + rd * kBStage;
        if (t + 1 < tiles) load_frags(af[(kk + 1) % 2], bf[(kk + 1) % 2], a_rd, b_rd, 0);
      } else {
        load_frags(af[(kk + 1) % 2], bf[(kk + 1) % 2], a_rd, b_rd, kk + 1);
      }
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < kNT; ++j) {
          const uint32_t(&bj)[4] = bf[kk % 2][j / 2];
          mma_16816<In>(acc[i][j], af[kk % 2][i], bj[(j % 2) * 2], bj[(j % 2) * 2 + 1]);
        }
    }
  }
  cp_async_wait<0>();  // only empty groups remain, but nothing may write the buffers below
  __syncthreads();     // every warp is done reading the stages

  // --- epilogue: accumulators into a (BM x kOutLd) FP32 tile. Lane (g, q) holds rows g and
  // g + 8, columns 2q, 2q + 1 of each 16 x 8 tile; the 8 floats of padding per row put the
  // 4 rows a half-warp writes 8 banks apart.
  float* out = reinterpret_cast<float*>(smem);
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int i = 0; i < kMT; ++i) {
    const int r = wm * kWM + i * 16 + g;
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      const int c = wn * kWN + j * 8 + 2 * q;
      *reinterpret_cast<float2*>(out + r * kOutLd + c) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(out + (r + 8) * kOutLd + c) = make_float2(acc[i][j][2], acc[i][j][3]);
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
  for (int r = warp; r < kBM; r += kThreads / 32) {
    const int gr = row0 + r, c = lane * 8, gc = col0 + c;
    if (gr >= M || gc >= N) continue;
    const float4* src = reinterpret_cast<const float4*>(out + r * kOutLd + c);
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
  auto* kernel = &k64_kernel<In, Out, kAsync>;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    return true;
  }();
  (void)raised;
  const long long blocks = (long long)((M + kBM - 1) / kBM) * ((N + kBN - 1) / kBN);
  kernel<<<static_cast<unsigned>(blocks), kThreads, kSmem, stream>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

}  // namespace

CH05_LAUNCHER(v7_mma_sync_k64) {
  if (M <= 0 || N <= 0) return;
  static const bool fits = wb::query_device().smem_per_block_optin >= kSmem;
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

CH05_INSTANTIATE(v7_mma_sync_k64, __half, float);
CH05_INSTANTIATE(v7_mma_sync_k64, __half, __half);
CH05_INSTANTIATE(v7_mma_sync_k64, __nv_bfloat16, float);
CH05_INSTANTIATE(v7_mma_sync_k64, __nv_bfloat16, __nv_bfloat16);

}  // namespace ch05::solution
