// The 8-bit wgmma pipeline of the Hopper steps v9 (FP8, per-tensor scales), v10 (FP8, block
// scales), v11 (INT8) and v12, v13 (v9, v10 with the promotion overlapped): one kernel
// template, three epilogue policies and two promotion schedules. Included by the variant files
// (hopper/v9_wgmma_fp8.cu, v10_wgmma_fp8_block.cu, v11_wgmma_int8.cu, v12_wgmma_fp8_overlap.cu,
// v13_wgmma_fp8_block_overlap.cu), which instantiate it; built for sm_90a alone, like v6
// (chapters/ch05_wmma/extra.cmake).
//
// What it keeps from v6 (hopper/wgmma_tma_kernel.cu, which explains each piece): TMA copies
// into 128-byte swizzled shared memory, full/empty mbarriers per stage, a producer warpgroup
// that gives its registers away and two consumer warpgroups of 64 rows each, a persistent grid
// walking tiles grouped by 8 block rows.
//
// What differs, and why:
//   * Both operands K-major. wgmma reads 8-bit operands (e4m3, e5m2, s8, u8) only K-major: the
//     transpose flags exist for 16-bit types alone. So A (M x K) and B (N x K) are both read as
//     rows of K, with the same descriptor form: v6's A descriptor, for both.
//   * One stage is 128 deep along K: 128 one-byte elements are one 128-byte swizzle row, so a
//     TMA box is (rows) x 128 bytes and each k = 32 wgmma step advances the descriptor's start
//     by 32 bytes, exactly as v6's A does for 16 BF16 values.
//   * FP8 (v9, v10): the accumulator is promoted every stage. Hopper's FP8 tensor-core sums keep
//     about 14 bits, not FP32 (spec_fp8.cu's error model), so each consumer keeps two register
//     sets: `part`, which the four wgmmas of a stage write (the first with scale-d = 0, so no
//     zeroing is needed), and `total`, FP32, into which part is added on the CUDA cores after
//     the stage (for v10 multiplied by the block's scales first: a scale per row of A and one
//     per 128 columns of B, and a 128-column tile has exactly one). Two sets of 64 x N floats
//     per warpgroup: N = 128 keeps them at 64 + 64 registers per thread. The price: the stage's
//     wgmmas must be waited for (wait_group 0) before the promotion; the other consumer
//     warpgroup keeps the tensor cores busy meanwhile.
//   * FP8, overlapped (v12, v13: Promote::Overlapped): three register sets, `total` and two
//     `part` sets that alternate by stage. A consumer issues stage s + 1's wgmmas into the other
//     part, then waits with wait_group 1 (stage s's group alone must be done), releases stage
//     s's slot and promotes its part while stage s + 1's wgmmas run. 3 x 64 = 192 accumulator
//     registers per thread, within the 232 that setmaxnreg gives the consumers. The K loop is
//     unrolled by two so that which part is which is known at compile time (an array indexed
//     by a runtime parity would live in local memory). The next tile's first stage is issued
//     before a tile's stores. Same promotion interval (128 of K) and the same sums in the same
//     order as v9/v10: the same error model.
//   * INT8 (v11): integer sums are exact, so one s32 accumulator over the whole K, as v6
//     (wait_group 1 keeps a stage in flight), and N = 256 like v6's tiles.
// Shared memory: kStages x (A: 128 rows x 128 bytes = 16 KB, B: kBN rows x 128 bytes), each
// box 1024-byte aligned (the 128-byte swizzle repeats every 8 rows). FP8: 6 x 32 KB; INT8:
// 4 x 48 KB.
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ch05.cuh"
#include "device/sm90.cuh"
#include "hopper.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CH05_SM90A_8BIT 1
#endif

namespace ch05::solution::hopper::k8 {

using namespace wb::sm90;
using wb::ptx::smem_u32;

// How a consumer treats its accumulators (the three steps).
enum class Epi { Fp8Tensor, Fp8Block, Int8 };
// When an FP8 consumer promotes a stage's partial sums: after waiting for all its wgmmas (v9,
// v10), or while the next stage's wgmmas run (v12, v13). INT8 has nothing to promote.
enum class Promote { AfterWait, Overlapped };

constexpr int kBM = 128, kBK = 128;               // block tile rows; elements (= bytes) of K per stage
constexpr int kConsumers = 2;                     // consumer warpgroups, 64 rows each
constexpr int kThreads = (1 + kConsumers) * 128;  // + the producer warpgroup
constexpr int kGroupM = 8;                        // block rows per group of the tile order
constexpr int kABytes = kBM * kBK;                // 16 KB per stage

template <Epi kEpi>
struct Cfg {
  static constexpr bool kInt = kEpi == Epi::Int8;
  static constexpr int kBN = kInt ? 256 : 128;                        // block tile columns (one wgmma's N)
  static constexpr int kStages = kInt ? 4 : 6;                        // 4 x 48 KB or 6 x 32 KB
  static constexpr int kBBytes = kBN * kBK;                           // B's box per stage
  static constexpr int kAcc = kBN / 2;                                // accumulators per thread for 64 x kBN
  static constexpr int kSmem = kStages * (kABytes + kBBytes) + 1024;  // + 1024 for the alignment
};
static_assert(kBK == 128, "one 128-byte swizzle row per row of a stage");
static_assert(kBM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
static_assert(Cfg<Epi::Fp8Tensor>::kSmem <= 227 * 1024 && Cfg<Epi::Int8>::kSmem <= 227 * 1024, "fits an SM");

// --- the wgmma instructions ---------------------------------------------------------------------
// d (64 x N per warpgroup) (+)= A (64 x 32, K-major) * B (32 x N, K-major), both through
// descriptors. scale_d = 0: d = A * B (the old d is ignored); 1: d += A * B.

#define CH05_R8(d, i)                                                                                         \
  "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), "+r"(d[i + 6]), \
      "+r"(d[i + 7])
#define CH05_R32(d, i) CH05_R8(d, i), CH05_R8(d, i + 8), CH05_R8(d, i + 16), CH05_R8(d, i + 24)

// FP8 E4M3 x E4M3 -> FP32, N = 128 (64 accumulators per thread).
__device__ __forceinline__ void wgmma_e4m3_n128(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3\n"
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "},\n"
      "%64, %65, p, 1, 1;\n"
      "}\n"
      : WB_WGMMA_D64(d)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// INT8 x INT8 -> INT32, N = 256 (128 accumulators per thread). Integer wgmma has no negation
// immediates, only scale-d.
__device__ __forceinline__ void wgmma_s8_n256(int (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8\n"
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "},\n"
      "%128, %129, p;\n"
      "}\n"
      : CH05_R32(d, 0), CH05_R32(d, 32), CH05_R32(d, 64), CH05_R32(d, 96)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

template <int N>
__device__ __forceinline__ void pin_int(int (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// Tile index -> (block row, block column), in groups of kGroupM block rows (L2 reuse of B).
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& bm, int& bn) {
  const int per_group = kGroupM * tiles_n, group = tile / per_group;
  const int first_m = group * kGroupM, rows = min(tiles_m - first_m, kGroupM);
  bm = first_m + (tile % per_group) % rows;
  bn = (tile % per_group) / rows;
}

// What the epilogue and the promotion need besides the tiles.
struct Params {
  int M, N, K;
  const float* scale_a;  // FP8: per tensor (1 value) or per block (KB x M, M fastest)
  const float* scale_b;  // FP8: per tensor (1 value) or per block (rows of ld_b)
  int ld_b;              // FP8 block: fp8_scale_b_ld(K)
  __nv_bfloat16* D16;    // FP8: the BF16 output
  const int32_t* C32;    // INT8: C (may be null)
  int32_t* D32;          // INT8: the INT32 output
};

// Two FP32 values rounded to a BF16 pair at D(r, c), D(r, c + 1); N is even, c is even.
__device__ __forceinline__ void store_bf16_pair(const Params& p, int r, int c, float v0, float v1) {
  if (r < p.M && c < p.N) {
    *reinterpret_cast<__nv_bfloat162*>(p.D16 + size_t(r) * p.N + c) = __floats2bfloat162_rn(v0, v1);
  }
}
// Two INT32 sums (+ C) at D(r, c), D(r, c + 1); one 8-byte store where aligned.
__device__ __forceinline__ void store_i32_pair(const Params& p, int r, int c, int v0, int v1) {
  if (r >= p.M || c >= p.N) return;
  const size_t at = size_t(r) * p.N + c;
  const bool two = c + 1 < p.N;
  if (p.C32 != nullptr) {
    v0 += p.C32[at];
    if (two) v1 += p.C32[at + 1];
  }
  if (two && at % 2 == 0) {
    *reinterpret_cast<int2*>(p.D32 + at) = make_int2(v0, v1);
  } else {
    p.D32[at] = v0;
    if (two) p.D32[at + 1] = v1;
  }
}

// The four FP8 wgmmas of one stage (k = 0, 32, 64, 96) into d: the first with scale-d = 0, so
// d ends as the tensor core's sum over these 128 of K alone. `a`, `b`: this warpgroup's 64 rows
// of A and the kBN rows of B in the stage's shared memory.
__device__ __forceinline__ void wgmma_stage_e4m3(float (&d)[64], uint32_t a, uint32_t b) {
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kBK / 32; ++kk) {
    wgmma_e4m3_n128(d, make_desc(a + kk * 32, 16, 1024), make_desc(b + kk * 32, 16, 1024), kk > 0);
  }
  wgmma_commit();
}

// v13: the scales of K block kt for this thread's rows r and r + 8 (zero past M), each times
// B's scale of column block bn (kBN == 128: one B block per tile). v10 has the same three
// lines inline (kept there so that v10's generated code stays what its numbers measured).
__device__ __forceinline__ void block_scales(const Params& p, int bn, int kt, int r, float& s_lo, float& s_hi) {
  const float sb = __ldg(p.scale_b + size_t(bn) * p.ld_b + kt);
  s_lo = r < p.M ? __ldg(p.scale_a + size_t(kt) * p.M + r) * sb : 0.0f;
  s_hi = r + 8 < p.M ? __ldg(p.scale_a + size_t(kt) * p.M + r + 8) * sb : 0.0f;
}

// The promotion: the tensor core's partial sum of one block of 128 along K, into FP32 (v10,
// v13: times the block's scales; in 8-column chunk j, part[4j], part[4j + 1] are row r and
// part[4j + 2], part[4j + 3] row r + 8).
template <Epi kEpi>
__device__ __forceinline__ void promote(float (&total)[64], const float (&part)[64], float s_lo, float s_hi) {
#pragma unroll
  for (int j = 0; j < 64 / 4; ++j) {
    if constexpr (kEpi == Epi::Fp8Block) {
      total[4 * j] = fmaf(part[4 * j], s_lo, total[4 * j]);
      total[4 * j + 1] = fmaf(part[4 * j + 1], s_lo, total[4 * j + 1]);
      total[4 * j + 2] = fmaf(part[4 * j + 2], s_hi, total[4 * j + 2]);
      total[4 * j + 3] = fmaf(part[4 * j + 3], s_hi, total[4 * j + 3]);
    } else {
      total[4 * j] += part[4 * j];
      total[4 * j + 1] += part[4 * j + 1];
      total[4 * j + 2] += part[4 * j + 2];
      total[4 * j + 3] += part[4 * j + 3];
    }
  }
}

// One 8-column chunk j of an FP8 epilogue (v9, v10, v12, v13): total[4j], total[4j + 1] (row r)
// and total[4j + 2], total[4j + 3] (row r + 8), times s, as BF16 pairs at columns c, c + 1.
// (The loop over the chunks stays in the kernel: moved in here with it, v9's code changed.)
__device__ __forceinline__ void store_bf16_chunk(const Params& p, const float (&total)[64], int j, int r, int c,
                                                 float s) {
  store_bf16_pair(p, r, c, total[4 * j] * s, total[4 * j + 1] * s);
  store_bf16_pair(p, r + 8, c, total[4 * j + 2] * s, total[4 * j + 3] * s);
}

template <Epi kEpi, Promote kPromote = Promote::AfterWait>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_8bit_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      const Params p) {
#if defined(CH05_SM90A_8BIT)
  using C = Cfg<kEpi>;
  constexpr int kStages = C::kStages, kBN = C::kBN, kAcc = C::kAcc;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  auto a_stage = [&](int s) { return base + uint32_t(s * kABytes); };                         // (128, 128 B)
  auto b_stage = [&](int s) { return base + uint32_t(kStages * kABytes + s * C::kBBytes); };  // (kBN, 128 B)
  auto full = [&](int s) { return smem_u32(&full_bar[s]); };
  auto empty = [&](int s) { return smem_u32(&empty_bar[s]); };

  const int tiles_m = (p.M + kBM - 1) / kBM, tiles_n = (p.N + kBN - 1) / kBN, tiles = tiles_m * tiles_n;
  const int ktiles = (p.K + kBK - 1) / kBK;  // the last stage's columns past K arrive as zeros
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full(s), 1);                // the producer's arrive, plus the TMA bytes
      mbar_init(empty(s), kConsumers * 4);  // one arrive per consumer warp
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // Producer: one thread issues both boxes of every stage.
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int bm, bn;
        tile_coords(tile, tiles_m, tiles_n, bm, bn);
        for (int kt = 0; kt < ktiles; ++kt) {
          mbar_wait(empty(stage), phase ^ 1);
          mbar_arrive_expect_tx(full(stage), kABytes + C::kBBytes);
          tma_load_2d(a_stage(stage), &map_a, kt * kBK, bm * kBM, full(stage));  // (K offset, row)
          tma_load_2d(b_stage(stage), &map_b, kt * kBK, bn * kBN, full(stage));
          if (++stage == kStages) stage = 0, phase ^= 1;
        }
      }
    }
    return;
  }

  // Consumers: warpgroup 1 computes rows 0-63 of each tile, warpgroup 2 rows 64-127.
  setmaxnreg_inc<232>();
  const int cw = warpgroup - 1, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;  // fragment row group and column pair
  auto release = [&](int s) {
    if (lane == 0) mbar_arrive(empty(s));
  };
  // Descriptors of stage s at k step kk (32 bytes each): A's 64 rows of this warpgroup, B's kBN rows.
  auto desc_a = [&](int s, int kk) { return make_desc(a_stage(s) + cw * 64 * 128 + kk * 32, 16, 1024); };
  auto desc_b = [&](int s, int kk) { return make_desc(b_stage(s) + kk * 32, 16, 1024); };
  auto desc_base_a = [&](int s) { return a_stage(s) + uint32_t(cw * 64 * 128); };  // v12, v13
  int stage = 0;
  uint32_t phase = 0;

  if constexpr (kEpi == Epi::Int8) {
    int d[kAcc];
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int bm, bn;
      tile_coords(tile, tiles_m, tiles_n, bm, bn);
#pragma unroll
      for (int i = 0; i < kAcc; ++i) d[i] = 0;
      int held = -1;  // the stage whose wgmmas may still be reading shared memory
      for (int kt = 0; kt < ktiles; ++kt) {
        mbar_wait(full(stage), phase);
        pin_int(d);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBK / 32; ++kk) wgmma_s8_n256(d, desc_a(stage, kk), desc_b(stage, kk), 1);
        wgmma_commit();
        wgmma_wait<1>();  // the previous stage's wgmmas are done with its shared memory
        pin_int(d);
        if (held >= 0) release(held);
        held = stage;
        if (++stage == kStages) stage = 0, phase ^= 1;
      }
      wgmma_wait<0>();
      pin_int(d);
      if (held >= 0) release(held);
      // Warp w holds rows 16w .. 16w + 15 of its 64; in 8-column chunk j, d[4j], d[4j + 1] are
      // row g, columns 2q, 2q + 1 and d[4j + 2], d[4j + 3] row g + 8.
      const int r = bm * kBM + cw * 64 + warp * 16 + g, c0 = bn * kBN + 2 * q;
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        store_i32_pair(p, r, c0 + 8 * j, d[4 * j], d[4 * j + 1]);
        store_i32_pair(p, r + 8, c0 + 8 * j, d[4 * j + 2], d[4 * j + 3]);
      }
    }
  } else if constexpr (kPromote == Promote::AfterWait) {
    float part[kAcc], total[kAcc];
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int bm, bn;
      tile_coords(tile, tiles_m, tiles_n, bm, bn);
      const int r = bm * kBM + cw * 64 + warp * 16 + g;  // this thread's rows: r and r + 8
#pragma unroll
      for (int i = 0; i < kAcc; ++i) total[i] = 0.0f;
      for (int kt = 0; kt < ktiles; ++kt) {
        // v10: this block's scales, fetched before the wait so that their latency hides behind it.
        float s_lo = 1.0f, s_hi = 1.0f;
        if constexpr (kEpi == Epi::Fp8Block) {
          const float sb = __ldg(p.scale_b + size_t(bn) * p.ld_b + kt);  // kBN == 128: one B block
          s_lo = r < p.M ? __ldg(p.scale_a + size_t(kt) * p.M + r) * sb : 0.0f;
          s_hi = r + 8 < p.M ? __ldg(p.scale_a + size_t(kt) * p.M + r + 8) * sb : 0.0f;
        }
        mbar_wait(full(stage), phase);
        pin(part);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kBK / 32; ++kk) wgmma_e4m3_n128(part, desc_a(stage, kk), desc_b(stage, kk), kk > 0);
        wgmma_commit();
        wgmma_wait<0>();  // the promotion reads part: every wgmma of the stage must be done
        pin(part);
        release(stage);
        promote<kEpi>(total, part, s_lo, s_hi);  // the tensor core's partial sum, into FP32
        if (++stage == kStages) stage = 0, phase ^= 1;
      }
      // Epilogue: v9 multiplies by the two tensor scales once; v10's are in already.
      float s = 1.0f;
      if constexpr (kEpi == Epi::Fp8Tensor) s = __ldg(p.scale_a) * __ldg(p.scale_b);
      const int c0 = bn * kBN + 2 * q;
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) store_bf16_chunk(p, total, j, r, c0 + 8 * j, s);
    }
  } else {
    // v12, v13: stage kt's partial sums are promoted while stage kt + 1's wgmmas run. `stage`,
    // `phase`: the next stage to issue; `held`: the stage whose wgmmas are oldest in flight.
    static_assert(kAcc == 64, "two part sets and the total: 3 x 64 registers per thread");
    float total[kAcc], part0[kAcc], part1[kAcc];
    auto next_stage = [&] {
      if (++stage == kStages) stage = 0, phase ^= 1;
    };
    // Stage 0 of a tile into part0 (`held` from then on).
    int held = stage;
    auto first_stage = [&] {
      held = stage;
      mbar_wait(full(stage), phase);
      pin(part0);
      wgmma_stage_e4m3(part0, desc_base_a(stage), b_stage(stage));
      next_stage();
    };
    if (int(blockIdx.x) >= tiles) return;
    first_stage();
    // The loop is left only where nothing is in flight (see the end of the body).
    for (int tile = blockIdx.x;; tile += int(gridDim.x)) {
      int bm, bn;
      tile_coords(tile, tiles_m, tiles_n, bm, bn);
      const int r = bm * kBM + cw * 64 + warp * 16 + g;  // this thread's rows: r and r + 8
#pragma unroll
      for (int i = 0; i < kAcc; ++i) total[i] = 0.0f;
      // A step: stage kt's sums are in flight into `done`; issue stage kt + 1's into `next`,
      // wait for stage kt's group alone (wait_group 1), release its slot, promote it.
      auto step = [&](float(&done)[kAcc], float(&next)[kAcc], int kt) {
        float s_lo = 1.0f, s_hi = 1.0f;  // v13: loaded first, their latency hidden by the waits
        if constexpr (kEpi == Epi::Fp8Block) block_scales(p, bn, kt, r, s_lo, s_hi);
        mbar_wait(full(stage), phase);
        pin(next);
        wgmma_stage_e4m3(next, desc_base_a(stage), b_stage(stage));
        wgmma_wait<1>();  // stage kt's group is done; stage kt + 1's runs on
        pin(done);
        release(held);  // stage kt's shared memory is read: the producer may refill it
        held = stage;
        next_stage();
        promote<kEpi>(total, done, s_lo, s_hi);
      };
      // The last stage of the tile: nothing left to issue, so wait for everything.
      auto last = [&](float(&done)[kAcc], int kt) {
        float s_lo = 1.0f, s_hi = 1.0f;
        if constexpr (kEpi == Epi::Fp8Block) block_scales(p, bn, kt, r, s_lo, s_hi);
        wgmma_wait<0>();
        pin(done);
        release(held);
        promote<kEpi>(total, done, s_lo, s_hi);
      };
      // Unrolled by two, so that done and next are fixed registers. Every path into and out of
      // the loop has exactly part0 in flight, and the tail below ends with wait_group 0: the
      // order of groups ptxas can follow without knowing ktiles (otherwise it serializes every
      // wgmma of the kernel).
      int kt = 0;
      for (; kt + 2 < ktiles; kt += 2) {
        step(part0, part1, kt);
        step(part1, part0, kt + 1);
      }
      if (kt + 1 < ktiles) {
        step(part0, part1, kt);
        last(part1, kt + 1);
      } else {
        last(part0, kt);
      }
      // Epilogue, as v9 / v10.
      auto epilogue = [&] {
        float s = 1.0f;
        if constexpr (kEpi == Epi::Fp8Tensor) s = __ldg(p.scale_a) * __ldg(p.scale_b);
        const int c0 = bn * kBN + 2 * q;
#pragma unroll
        for (int j = 0; j < kBN / 8; ++j) store_bf16_chunk(p, total, j, r, c0 + 8 * j, s);
      };
      // The next tile's first stage goes in before the stores, so that the tensor cores have
      // work during them. Two branches, not one `if` before a shared epilogue: the way back to
      // the top always has part0 in flight and the way out never, as ptxas needs to see.
      if (tile + int(gridDim.x) < tiles) {
        first_stage();
        epilogue();
      } else {
        epilogue();
        break;
      }
    }
  }
#else
  __trap();  // built for sm_90a only; the launchers never run it elsewhere
#endif
}

// --- host side ------------------------------------------------------------------------------

// A 2-D row-major matrix of bytes: `outer` rows of `inner` bytes, read in (box_outer x 128)
// boxes with the 128-byte swizzle; zeros outside the matrix. `inner` must be a multiple of 16.
inline CUtensorMap make_map_8bit(const void* base, uint64_t inner, uint64_t outer, uint32_t box_outer,
                                 const char* who) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner};  // bytes from one row to the next
  const cuuint32_t box[2] = {uint32_t(kBK), box_outer};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box,
                           element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
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

// Runs the kernel of `kEpi` on A (M x K) and B (N x K), both K-major bytes.
template <Epi kEpi, Promote kPromote = Promote::AfterWait>
void launch(MapCache& cache, const void* A, const void* B, const Params& p, cudaStream_t stream, const char* who) {
  using C = Cfg<kEpi>;
  if (cache.a != A || cache.b != B || cache.m != p.M || cache.n != p.N || cache.k != p.K) {
    cache.map_a = make_map_8bit(A, uint64_t(p.K), uint64_t(p.M), kBM, who);     // A: M rows of K
    cache.map_b = make_map_8bit(B, uint64_t(p.K), uint64_t(p.N), C::kBN, who);  // B: N rows of K
    cache.a = A, cache.b = B, cache.m = p.M, cache.n = p.N, cache.k = p.K;
  }
  auto* kernel = &wgmma_8bit_kernel<kEpi, kPromote>;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem));
    return true;
  }();
  (void)raised;
  const int sms = wb::sm_count();
  const long long tiles = (long long)((p.M + kBM - 1) / kBM) * ((p.N + C::kBN - 1) / C::kBN);
  const int grid = static_cast<int>(std::min<long long>(tiles, sms));  // persistent: one block per SM
  kernel<<<grid, kThreads, C::kSmem, stream>>>(cache.map_a, cache.map_b, p);
  WB_CHECK_LAUNCH();
}

// The FP8 launchers (v9, v12: per-tensor scales, v10, v13: per-block scales): the argument
// checks, then the kernel of kEpi and kPromote on one map cache per kernel. `who` names the
// step in errors.
template <Epi kEpi, Promote kPromote = Promote::AfterWait>
void run_fp8(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
             const float* scale_b, __nv_bfloat16* D, cudaStream_t stream, const char* who) {
  check_fp8_gemm_args(M, N, K, who);
  check_tma_pointers(A, B, who);
  if (M == 0 || N == 0) return;
  require_wgmma(who);
  static MapCache cache;
  const int ld_b = kEpi == Epi::Fp8Block ? fp8_scale_b_ld(K) : 0;
  const Params p{M, N, K, scale_a, scale_b, ld_b, D, nullptr, nullptr};
  launch<kEpi, kPromote>(cache, A, B, p, stream, who);
}

}  // namespace ch05::solution::hopper::k8
