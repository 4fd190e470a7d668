// The kernel of v14 (FP16/BF16) and v15 (INT8): v7's and v8's mma.sync warp tiles, fed by TMA
// and released by mbarriers, one block per SM walking its output tiles (sm_90a only, like the
// rest of hopper/).
//
// What stays as in v7: 128 x 256 block tiles of 8 warps, each warp 64 x 64 (4 x 8 mma tiles),
// ldmatrix.x4 + mma.sync, two fragment sets in flight, stages of one 128-byte line of K per
// row (64 BF16 or 128 INT8 values), the grouped tile order (8 block rows at a time).
//
// What changes, and why:
//   * TMA fills the stages. One thread issues 5 (BF16: A, then B as 4 boxes of 64 columns) or
//     2 (INT8) copies per stage; the other 255 issue no cp.async and keep no copy addresses.
//     TMA writes the 128-byte swizzle (the 16-byte piece c of 128-byte line r at c ^ (r % 8)),
//     which is v7's XOR on A's rows, so A's ldmatrix offsets are v7's. BF16's B (K x N)
//     arrives as 4 boxes of 64 k rows x 64 columns, one per warp column: a warp's B rows are
//     128 bytes apart instead of 512, with the same XOR, so B's offsets are v7's too.
//   * mbarriers instead of __syncthreads(). Each stage has a "full" barrier (the copies'
//     bytes landed) and an "empty" one (each warp arrives once it has read its last fragments
//     of the stage). A warp waits only for the data it reads next. Thread 0 refills the stage
//     of K tile u - 1 with K tile u - 1 + kStages at the first k step of K tile u, once every
//     warp has released it (the second step measured alike, within the run-to-run spread;
//     the third, 11 % slower).
//   * Persistent: grid = the SM count; block b takes tiles b, b + grid, ... as one stream of K
//     tiles, so the copies of the next tile's first stages run under this tile's last K tiles
//     and under its epilogue, and no block waits for its first data except the first time.
//   * The epilogue cannot use the stages (they hold the next tile by then). 16-bit and INT32
//     outputs without C go through 8 KB of shared memory per warp, so that a lane stores 16
//     contiguous bytes and an instruction whole rows (these forms keep 3 stages to make
//     room); FP32 outputs, and D + C, go straight from the accumulators through store_pair
//     (a lane's pair: 8 bytes for FP32 or INT32, 4 lanes a 32-byte sector; 4 bytes for
//     16-bit types, half a sector). Measured on INT8 (H200, 4096^3): staged 153.2 us, straight
//     from the accumulators with 4 stages 156.2 us.
//   * INT8 (v15): B is read as Bt (N x K, K contiguous), transposed once by the variant's
//     untimed prepare step as for v11 (the cuBLASLt reference arranges its B the same way).
//     B's fragments then come from plain ldmatrix, exactly like A's: no .trans and no byte
//     permutes (v8 needs 16 prmt per 32 mma.sync).
// Edges: TMA fills zeros past M, N and K, so every tile takes one path; the epilogue writes
// nothing outside M x N. The launchers send shapes TMA cannot describe to v7 or v8.
//
// Shared memory: stages of 16 KB of A + 32 KB of B, 4 of them (192 KB), or 3 (144 KB) + 64 KB
// of output staging; + 1 KB to align the stages to the swizzle's 1024-byte period.
#pragma once
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ch05.cuh"
#include "device/mma.cuh"
#include "device/mma_pipeline.cuh"
#include "device/sm90.cuh"
#include "device/wgmma_gemm.cuh"  // WB_SM90A_GEMM, grouped_tile, make_tensor_map_2d
#include "mma_common.cuh"         // store_pair
#include "runtime/device.cuh"
#include "runtime/errors.cuh"

namespace ch05::solution::hopper::mt {

template <class In, class Out>
struct Tiling {
  static constexpr bool kInt8 = std::is_same_v<In, int8_t>;
  static constexpr bool kStaged = sizeof(Out) == 2 || kInt8;               // D through shared memory
  static constexpr int kBM = 128, kBN = 256, kBK = 128 / int(sizeof(In));  // one 128-byte line of K
  // D staged: 3 stages (144 KB) + 8 KB of output staging per warp; else 4 stages (192 KB).
  static constexpr int kStages = kStaged ? 3 : 4, kThreads = 256, kWarpsN = 4, kWM = 64, kWN = 64;
  static constexpr int kMT = 4, kNT = 8, kKK = 4;  // mma tiles per warp; k steps (32 bytes of K) per stage
  static constexpr int kRefillKK = 0;              // the k step of K tile u at which thread 0 refills u - 1
  static constexpr int kAStage = kBM * 128;        // 16 KB: 128 rows of A
  static constexpr int kBStage = kBN * 128;        // 32 KB: 4 boxes of 64 k rows x 64 BF16 columns, or 256 rows of Bt
  static constexpr int kBoxB = 64 * 128;           // one BF16 box of B
  static constexpr int kPipe = kStages * (kAStage + kBStage);
  static constexpr int kStageRows = sizeof(Out) == 2 ? 64 : 32;  // rows of a warp's tile staged at once: 8 KB
  static constexpr int kOutBytes = kStaged ? (kThreads / 32) * 8192 : 0;
  static constexpr int kSmem = kPipe + kOutBytes + 1024;  // + room to align the stages to 1024
  static constexpr int kGroupM = 8;
  static_assert(kThreads / 32 == (kBM / kWM) * kWarpsN && kWN * kWarpsN == kBN, "8 warps of 64 x 64");
  static_assert(kSmem + 1024 <= 227 * 1024, "fits an SM (with the static barriers)");
};

// Two FP32 values rounded to a 16-bit pair (the lower address first).
template <class Out>
__device__ __forceinline__ uint32_t pack2(float v0, float v1) {
  if constexpr (std::is_same_v<Out, __half>) {
    const __half2 h = __floats2half2_rn(v0, v1);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// Two INT32 accumulators to D(r, c), D(r, c + 1), C added, nothing outside M x N; one 8-byte
// store when both are inside (c is even, so `at` is even whenever N is).
__device__ __forceinline__ void store_pair_i32(int32_t* D, const int32_t* C, int M, int N, int r, int c, int v0,
                                               int v1) {
  if (r >= M || c >= N) return;
  const size_t at = size_t(r) * N + c;
  if (c + 1 < N && at % 2 == 0) {
    if (C != nullptr) {
      const int2 cv = *reinterpret_cast<const int2*>(C + at);
      v0 += cv.x, v1 += cv.y;
    }
    *reinterpret_cast<int2*>(D + at) = make_int2(v0, v1);
  } else {
    D[at] = C != nullptr ? v0 + C[at] : v0;
    if (c + 1 < N) D[at + 1] = C != nullptr ? v1 + C[at + 1] : v1;
  }
}

// grid: min(tiles, SMs) blocks of kThreads, Tiling::kSmem bytes of dynamic shared memory.
// map_a: A (M x K) in boxes of (128 bytes of K, 128 rows). map_b: BF16/FP16, B (K x N) in boxes
// of (64 columns, 64 k rows); INT8, Bt (N x K) in boxes of (128 k, 256 rows).
template <class In, class Out>
__global__ void __launch_bounds__(Tiling<In, Out>::kThreads, 1)
    mma_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N,
                   int K, const Out* C, Out* D) {
#if defined(WB_SM90A_GEMM)
  using namespace wb::ptx;
  using namespace wb::sm90;
  using T = Tiling<In, Out>;
  using Acc = std::conditional_t<T::kInt8, int, float>;
  constexpr int kStages = T::kStages, kMT = T::kMT, kNT = T::kNT, kKK = T::kKK;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  const uint32_t raw32 = smem_u32(smem_raw);
  const uint32_t base = (raw32 + 1023u) & ~1023u;  // the swizzle repeats every 1024 bytes
  const uint32_t sA32 = base, sB32 = base + kStages * T::kAStage;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / T::kWarpsN, wn = warp % T::kWarpsN;
  const int tiles_m = (M + T::kBM - 1) / T::kBM, tiles_n = (N + T::kBN - 1) / T::kBN;
  const int ktiles = (K + T::kBK - 1) / T::kBK;  // per output tile; k past K arrives as zeros
  const int mine = (tiles_m * tiles_n - int(blockIdx.x) + int(gridDim.x) - 1) / int(gridDim.x);
  const int total = mine * ktiles;  // K tiles this block walks
  // The corner of this block's n-th output tile.
  auto corner = [&](int n, int& row0, int& col0) {
    int bm, bn;
    grouped_tile<T::kGroupM>(int(blockIdx.x) + n * int(gridDim.x), tiles_m, tiles_n, bm, bn);
    row0 = bm * T::kBM, col0 = bn * T::kBN;
  };

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);                  // the producer's arrive, plus the TMA bytes
      mbar_init(smem_u32(&empty_bar[s]), T::kThreads / 32);  // one arrive per warp
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  // --- the producer (thread 0): the next K tile of the walk into stage s. Its position (the
  // pn-th output tile, at corner (prow0, pcol0), K offset pk0) advances one K tile per fill.
  int pn = 0, pk0 = 0, prow0 = 0, pcol0 = 0;
  corner(0, prow0, pcol0);
  auto fill = [&](int s) {
    const uint32_t full = smem_u32(&full_bar[s]);
    mbar_arrive_expect_tx(full, T::kAStage + T::kBStage);
    tma_load_2d(sA32 + s * T::kAStage, &map_a, pk0, prow0, full);
    if constexpr (T::kInt8) {
      tma_load_2d(sB32 + s * T::kBStage, &map_b, pk0, pcol0, full);
    } else {
#pragma unroll
      for (int g = 0; g < T::kBN / 64; ++g) {
        tma_load_2d(sB32 + s * T::kBStage + g * T::kBoxB, &map_b, pcol0 + 64 * g, pk0, full);
      }
    }
    pk0 += T::kBK;
    if (pk0 >= K) {
      pk0 = 0;
      if (++pn < mine) corner(pn, prow0, pcol0);
    }
  };
  if (tid == 0) {
    for (int s = 0; s < kStages && s < total; ++s) fill(s);
  }

  // --- fragments. A, as v7: lane l reads row l % 16 of a 16-row group at piece 2kk + l / 16,
  // stored at (2kk) ^ x, x = (l / 16) ^ (l % 8).
  const int x = (lane / 16) ^ (lane % 8);
  uint32_t xo[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) xo[m] = uint32_t((x ^ (2 * m)) << 4);
  const uint32_t a_ld = uint32_t((wm * T::kWM + lane % 16) * 128);  // + i * 16 rows + xo[kk]
  // B, BF16: ldmatrix.trans on the warp's box (64 k rows of 128 bytes): lane l reads k row
  // 16kk + l % 16 at piece 2j + l / 16 (the 16-column group j): xo[j] again.
  // B, INT8: plain ldmatrix on Bt, laid out as A: lane l reads n row 16j + l % 8 + 8 (l / 16)
  // at piece 2kk + (l / 8) % 2, stored at (2kk) ^ y, y = ((l / 8) % 2) ^ (l % 8). Matrices 0-3
  // are b0, b1 of n tile 2j, then b0, b1 of n tile 2j + 1 (mma_tiles_16816's order).
  uint32_t b_ld, yo[4];
  if constexpr (T::kInt8) {
    const int y = ((lane / 8) % 2) ^ (lane % 8);
#pragma unroll
    for (int m = 0; m < 4; ++m) yo[m] = uint32_t((y ^ (2 * m)) << 4);
    b_ld = uint32_t((wn * T::kWN + lane % 8 + 8 * (lane / 16)) * 128);  // + j * 16 rows + yo[kk]
  } else {
    b_ld = uint32_t(wn * T::kBoxB + (lane % 16) * 128);  // + kk * 16 rows + xo[j]
  }
  auto load_frags = [&](uint32_t(&a)[kMT][4], uint32_t(&b)[kNT / 2][4], uint32_t a_stage, uint32_t b_stage, int kk) {
#pragma unroll
    for (int i = 0; i < kMT; ++i) ldmatrix_x4(a[i], a_stage + a_ld + i * 16 * 128 + xo[kk]);
#pragma unroll
    for (int j = 0; j < kNT / 2; ++j) {
      if constexpr (T::kInt8) {
        ldmatrix_x4(b[j], b_stage + b_ld + j * 16 * 128 + yo[kk]);
      } else {
        ldmatrix_x4_trans(b[j], b_stage + b_ld + kk * 16 * 128 + xo[j]);
      }
    }
  };

  Acc acc[kMT][kNT][4];
  auto mma = [&](const uint32_t(&a)[kMT][4], const uint32_t(&b)[kNT / 2][4]) {
    if constexpr (T::kInt8) {
#pragma unroll
      for (int i = 0; i < kMT; ++i)
#pragma unroll
        for (int j = 0; j < kNT; ++j) mma_16832_s8(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
    } else {
      wb::gemm::mma_tiles_16816<In>(acc, a, b);
    }
  };

  // --- the walk: stage s holds K tile u; its fill has parity `phase`.
  uint32_t af[2][kMT][4], bf[2][kNT / 2][4];
  int s = 0;
  uint32_t phase = 0;
  uint32_t a_rd = sA32, b_rd = sB32;
  mbar_wait(smem_u32(&full_bar[0]), 0);
  load_frags(af[0], bf[0], a_rd, b_rd, 0);
  int u = 0;
  for (int n = 0; n < mine; ++n) {
    wb::gemm::zero_acc(acc);
    for (int t = 0; t < ktiles; ++t, ++u) {
#pragma unroll
      for (int kk = 0; kk < kKK; ++kk) {
        if (kk == kKK - 1) {
          // The warp's last fragments of K tile u were read at kk - 1: release the stage, then
          // wait for K tile u + 1 (of this output tile or the next) and read its first step.
          __syncwarp();
          if (lane == 0) mbar_arrive(smem_u32(&empty_bar[s]));
          if (++s == kStages) s = 0, phase ^= 1u;
          a_rd = sA32 + s * T::kAStage;
          b_rd = sB32 + s * T::kBStage;
          if (u + 1 < total) {
            mbar_wait(smem_u32(&full_bar[s]), phase);
            load_frags(af[(kk + 1) % 2], bf[(kk + 1) % 2], a_rd, b_rd, 0);
          }
        } else {
          load_frags(af[(kk + 1) % 2], bf[(kk + 1) % 2], a_rd, b_rd, kk + 1);
        }
        mma(af[kk % 2], bf[kk % 2]);
        if (kk == T::kRefillKK && tid == 0 && u >= 1 && u - 1 + kStages < total) {
          // The stage of K tile u - 1 (every warp has released it by now, or is about to) takes
          // K tile u - 1 + kStages.
          const int sp = s == 0 ? kStages - 1 : s - 1;
          const uint32_t pp = s == 0 ? phase ^ 1u : phase;
          mbar_wait(smem_u32(&empty_bar[sp]), pp);
          fill(sp);
        }
      }
    }

    // --- epilogue: lane (g, q) holds rows g, g + 8 and columns 2q, 2q + 1 of each 16 x 8 tile.
    int row0, col0;
    corner(n, row0, col0);
    const int g = lane / 4, q = lane % 4;
    if constexpr (T::kStaged) {
      if (C == nullptr && reinterpret_cast<uintptr_t>(D) % 16 == 0 && N % (16 / int(sizeof(Out))) == 0) {
        // D without C, through the warp's 8 KB: kR rows of the warp's tile at a time, each
        // row kRow bytes (64 values), the 16-byte piece p of row r stored at p ^ (r % 8), so
        // that the 8 rows one store touches fall in different bank groups; then each lane
        // stores 16 contiguous bytes, whole rows per instruction (whole 32-byte sectors).
        // Rows of D are whole 16-byte pieces (N % (16 / sizeof(Out)) == 0), so a piece lies
        // inside D or outside it.
        constexpr int kR = T::kStageRows, kRow = T::kWN * int(sizeof(Out)), kLanesPerRow = kRow / 16;
        unsigned char* st = smem_raw + (base - raw32) + T::kPipe + warp * kR * kRow;
#pragma unroll
        for (int h = 0; h < T::kWM / kR; ++h) {
#pragma unroll
          for (int i = h * kR / 16; i < (h + 1) * kR / 16; ++i) {
#pragma unroll
            for (int j = 0; j < kNT; ++j) {
              const int r = (i % (kR / 16)) * 16 + g;  // r % 8 == g
              if constexpr (sizeof(Out) == 2) {        // columns 8j + 2q, + 1: piece j, bytes 4q ..
                *reinterpret_cast<uint32_t*>(st + r * kRow + ((j ^ g) << 4) + 4 * q) =
                    pack2<Out>(acc[i][j][0], acc[i][j][1]);
                *reinterpret_cast<uint32_t*>(st + (r + 8) * kRow + ((j ^ g) << 4) + 4 * q) =
                    pack2<Out>(acc[i][j][2], acc[i][j][3]);
              } else {  // INT32: piece 2j + q / 2, bytes 8 (q % 2) ..
                const int pc = ((2 * j + q / 2) ^ g) << 4;
                *reinterpret_cast<int2*>(st + r * kRow + pc + 8 * (q % 2)) = make_int2(acc[i][j][0], acc[i][j][1]);
                *reinterpret_cast<int2*>(st + (r + 8) * kRow + pc + 8 * (q % 2)) =
                    make_int2(acc[i][j][2], acc[i][j][3]);
              }
            }
          }
          __syncwarp();
#pragma unroll 4
          for (int p = 0; p < kR * kLanesPerRow / 32; ++p) {
            const int r = p * (32 / kLanesPerRow) + lane / kLanesPerRow, pc = lane % kLanesPerRow;
            const int gr = row0 + wm * T::kWM + h * kR + r, gc = col0 + wn * T::kWN + pc * (16 / int(sizeof(Out)));
            const uint4 v = *reinterpret_cast<const uint4*>(st + r * kRow + ((pc ^ (r % 8)) << 4));
            if (gr < M && gc < N) *reinterpret_cast<uint4*>(D + size_t(gr) * N + gc) = v;
          }
          __syncwarp();  // read before the next rows are written
        }
        continue;
      }
    }
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      const int r = row0 + wm * T::kWM + i * 16 + g;
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        const int c = col0 + wn * T::kWN + j * 8 + 2 * q;
        if constexpr (T::kInt8) {
          store_pair_i32(D, C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
          store_pair_i32(D, C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
        } else {
          store_pair(D, C, M, N, r, c, acc[i][j][0], acc[i][j][1]);
          store_pair(D, C, M, N, r + 8, c, acc[i][j][2], acc[i][j][3]);
        }
      }
    }
  }
#else
  __trap();  // built for sm_90a only; the launchers never run it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// A 2-D row-major matrix of bytes (`outer` rows of `inner` bytes, `inner` a multiple of 16)
// in (128-byte x box_outer) boxes with the 128-byte swizzle; zeros outside.
inline CUtensorMap make_map_bytes(const void* base, uint64_t inner, uint64_t outer, uint32_t box_outer,
                                  const char* who) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner};
  const cuuint32_t box[2] = {128, box_outer};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      wb::sm90::tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides,
                                     box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error(std::string(who) + ": cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                             ")");
  }
  return map;
}

// The maps of the last problem, so that timing a call does not time their encoding.
struct MapCache {
  const void* a = nullptr;
  const void* b = nullptr;
  int m = -1, n = -1, k = -1;
  CUtensorMap map_a{}, map_b{};
};

// D = A * B (+ C), M, N, K > 0, A and B 16-byte aligned. FP16/BF16: B is K x N, K and N
// multiples of 8. INT8: B is Bt (N x K), K a multiple of 16.
template <class In, class Out>
void launch(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream, const char* who) {
  using T = Tiling<In, Out>;
  static MapCache cache;
  if (cache.a != A || cache.b != B || cache.m != M || cache.n != N || cache.k != K) {
    if constexpr (T::kInt8) {
      cache.map_a = make_map_bytes(A, uint64_t(K), uint64_t(M), T::kBM, who);  // A: M rows of K
      cache.map_b = make_map_bytes(B, uint64_t(K), uint64_t(N), T::kBN, who);  // Bt: N rows of K
    } else {
      cache.map_a = wb::sm90::make_tensor_map_2d(A, uint64_t(K), uint64_t(M), T::kBK, T::kBM, who);  // M rows of K
      cache.map_b = wb::sm90::make_tensor_map_2d(B, uint64_t(N), uint64_t(K), 64, T::kBK, who);      // K rows of N
    }
    cache.a = A, cache.b = B, cache.m = M, cache.n = N, cache.k = K;
  }
  auto* kernel = &mma_tma_kernel<In, Out>;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmem));
    return true;
  }();
  (void)raised;
  const long long tiles = (long long)((M + T::kBM - 1) / T::kBM) * ((N + T::kBN - 1) / T::kBN);
  const int grid = static_cast<int>(std::min<long long>(tiles, wb::sm_count()));  // persistent: one block per SM
  kernel<<<grid, T::kThreads, T::kSmem, stream>>>(cache.map_a, cache.map_b, M, N, K, C, D);
  WB_CHECK_LAUNCH();
}

}  // namespace ch05::solution::hopper::mt
