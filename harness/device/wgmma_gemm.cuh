// A Hopper (sm_90a) GEMM from TMA, mbarriers and wgmma, in pieces a kernel puts together:
//   * wgmma_ss<In, N, kTransA, kTransB>: one wgmma.mma_async m64nNk16, FP16 or BF16 inputs, both
//     operands from shared memory through descriptors, FP32 accumulators (N / 2 per thread);
//   * PipeState, produce_tile, consume_tile: the full / empty mbarrier pipeline over kStages
//     shared-memory stages, the producer's loop over one tile's K and the consumers' loop
//     (wgmma.wait_group 1: one stage's wgmmas stay in flight while the next is issued);
//     init_stage_barriers and run_producer: the barriers' setup and the producer warpgroup of
//     a persistent grid (kmajor_gemm_kernel below, chapter 5's v16 and v17);
//   * grouped_tile: a persistent grid's tile order, kGroupM block rows at a time (L2 reuse);
//   * for_each_pair: where each accumulator lies in the 64 x N tile, for an epilogue;
//   * KMajorTile and kmajor_gemm_kernel: a whole GEMM for two K-major operands, y (M, N) =
//     x (M, K) · W (N, K)ᵀ, a BM x BN tile per step, its epilogue a template parameter;
//   * make_tensor_map_2d (host): the TMA descriptor of a row-major 16-bit matrix, 128-byte
//     swizzle.
//
// Chapter 5 teaches them (its Hopper bonus, v6_wgmma_tma: hopper/wgmma_tma_kernel.cu explains
// TMA, the barriers' phases, the descriptor's fields and the warp specialisation), and v6's
// kernel is built from the pieces above; chapter 9's v12_wgmma_epilogue runs kmajor_gemm_kernel
// with the bias and GELU as its epilogue. The one-instruction wrappers they use are in
// device/sm90.cuh.
//
// Include it only from code built for sm_90a (workbook_add_hopper_library, cmake/Workbook.cmake).
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "device/sm90.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WB_SM90A_GEMM 1
#endif

namespace wb::sm90 {

// --- wgmma m64nNk16, shared-memory operands --------------------------------------------------
// The asm of one wgmma names its N / 2 accumulators one by one: WB_WGMMA_P<R> is the list of
// places "%0, ..., %(R-1)", WB_WGMMA_C<R>(d) the matching "+f"(d[0]), ..., "+f"(d[R-1]).
#define WB_WGMMA_F4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WB_WGMMA_P4 "%0, %1, %2, %3"
#define WB_WGMMA_P8 WB_WGMMA_P4 ", %4, %5, %6, %7"
#define WB_WGMMA_P12 WB_WGMMA_P8 ", %8, %9, %10, %11"
#define WB_WGMMA_P16 WB_WGMMA_P12 ", %12, %13, %14, %15"
#define WB_WGMMA_P20 WB_WGMMA_P16 ", %16, %17, %18, %19"
#define WB_WGMMA_P24 WB_WGMMA_P20 ", %20, %21, %22, %23"
#define WB_WGMMA_P28 WB_WGMMA_P24 ", %24, %25, %26, %27"
#define WB_WGMMA_P32 WB_WGMMA_P28 ", %28, %29, %30, %31"
#define WB_WGMMA_P36 WB_WGMMA_P32 ", %32, %33, %34, %35"
#define WB_WGMMA_P40 WB_WGMMA_P36 ", %36, %37, %38, %39"
#define WB_WGMMA_P44 WB_WGMMA_P40 ", %40, %41, %42, %43"
#define WB_WGMMA_P48 WB_WGMMA_P44 ", %44, %45, %46, %47"
#define WB_WGMMA_P52 WB_WGMMA_P48 ", %48, %49, %50, %51"
#define WB_WGMMA_P56 WB_WGMMA_P52 ", %52, %53, %54, %55"
#define WB_WGMMA_P60 WB_WGMMA_P56 ", %56, %57, %58, %59"
#define WB_WGMMA_P64 WB_WGMMA_P60 ", %60, %61, %62, %63"
#define WB_WGMMA_P68 WB_WGMMA_P64 ", %64, %65, %66, %67"
#define WB_WGMMA_P72 WB_WGMMA_P68 ", %68, %69, %70, %71"
#define WB_WGMMA_P76 WB_WGMMA_P72 ", %72, %73, %74, %75"
#define WB_WGMMA_P80 WB_WGMMA_P76 ", %76, %77, %78, %79"
#define WB_WGMMA_P84 WB_WGMMA_P80 ", %80, %81, %82, %83"
#define WB_WGMMA_P88 WB_WGMMA_P84 ", %84, %85, %86, %87"
#define WB_WGMMA_P92 WB_WGMMA_P88 ", %88, %89, %90, %91"
#define WB_WGMMA_P96 WB_WGMMA_P92 ", %92, %93, %94, %95"
#define WB_WGMMA_P100 WB_WGMMA_P96 ", %96, %97, %98, %99"
#define WB_WGMMA_P104 WB_WGMMA_P100 ", %100, %101, %102, %103"
#define WB_WGMMA_P108 WB_WGMMA_P104 ", %104, %105, %106, %107"
#define WB_WGMMA_P112 WB_WGMMA_P108 ", %108, %109, %110, %111"
#define WB_WGMMA_P116 WB_WGMMA_P112 ", %112, %113, %114, %115"
#define WB_WGMMA_P120 WB_WGMMA_P116 ", %116, %117, %118, %119"
#define WB_WGMMA_P124 WB_WGMMA_P120 ", %120, %121, %122, %123"
#define WB_WGMMA_P128 WB_WGMMA_P124 ", %124, %125, %126, %127"
#define WB_WGMMA_C4(d) WB_WGMMA_F4(d, 0)
#define WB_WGMMA_C8(d) WB_WGMMA_C4(d), WB_WGMMA_F4(d, 4)
#define WB_WGMMA_C12(d) WB_WGMMA_C8(d), WB_WGMMA_F4(d, 8)
#define WB_WGMMA_C16(d) WB_WGMMA_C12(d), WB_WGMMA_F4(d, 12)
#define WB_WGMMA_C20(d) WB_WGMMA_C16(d), WB_WGMMA_F4(d, 16)
#define WB_WGMMA_C24(d) WB_WGMMA_C20(d), WB_WGMMA_F4(d, 20)
#define WB_WGMMA_C28(d) WB_WGMMA_C24(d), WB_WGMMA_F4(d, 24)
#define WB_WGMMA_C32(d) WB_WGMMA_C28(d), WB_WGMMA_F4(d, 28)
#define WB_WGMMA_C36(d) WB_WGMMA_C32(d), WB_WGMMA_F4(d, 32)
#define WB_WGMMA_C40(d) WB_WGMMA_C36(d), WB_WGMMA_F4(d, 36)
#define WB_WGMMA_C44(d) WB_WGMMA_C40(d), WB_WGMMA_F4(d, 40)
#define WB_WGMMA_C48(d) WB_WGMMA_C44(d), WB_WGMMA_F4(d, 44)
#define WB_WGMMA_C52(d) WB_WGMMA_C48(d), WB_WGMMA_F4(d, 48)
#define WB_WGMMA_C56(d) WB_WGMMA_C52(d), WB_WGMMA_F4(d, 52)
#define WB_WGMMA_C60(d) WB_WGMMA_C56(d), WB_WGMMA_F4(d, 56)
#define WB_WGMMA_C64(d) WB_WGMMA_C60(d), WB_WGMMA_F4(d, 60)
#define WB_WGMMA_C68(d) WB_WGMMA_C64(d), WB_WGMMA_F4(d, 64)
#define WB_WGMMA_C72(d) WB_WGMMA_C68(d), WB_WGMMA_F4(d, 68)
#define WB_WGMMA_C76(d) WB_WGMMA_C72(d), WB_WGMMA_F4(d, 72)
#define WB_WGMMA_C80(d) WB_WGMMA_C76(d), WB_WGMMA_F4(d, 76)
#define WB_WGMMA_C84(d) WB_WGMMA_C80(d), WB_WGMMA_F4(d, 80)
#define WB_WGMMA_C88(d) WB_WGMMA_C84(d), WB_WGMMA_F4(d, 84)
#define WB_WGMMA_C92(d) WB_WGMMA_C88(d), WB_WGMMA_F4(d, 88)
#define WB_WGMMA_C96(d) WB_WGMMA_C92(d), WB_WGMMA_F4(d, 92)
#define WB_WGMMA_C100(d) WB_WGMMA_C96(d), WB_WGMMA_F4(d, 96)
#define WB_WGMMA_C104(d) WB_WGMMA_C100(d), WB_WGMMA_F4(d, 100)
#define WB_WGMMA_C108(d) WB_WGMMA_C104(d), WB_WGMMA_F4(d, 104)
#define WB_WGMMA_C112(d) WB_WGMMA_C108(d), WB_WGMMA_F4(d, 108)
#define WB_WGMMA_C116(d) WB_WGMMA_C112(d), WB_WGMMA_F4(d, 112)
#define WB_WGMMA_C120(d) WB_WGMMA_C116(d), WB_WGMMA_F4(d, 116)
#define WB_WGMMA_C124(d) WB_WGMMA_C120(d), WB_WGMMA_F4(d, 120)
#define WB_WGMMA_C128(d) WB_WGMMA_C124(d), WB_WGMMA_F4(d, 124)

// wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<t>.<t> {d}, desc-a, desc-b, scale-d, imm-scale-a,
// imm-scale-b, imm-trans-a, imm-trans-b (PTX ISA, "wgmma.mma_async"): d += A * B, A 64 x 16,
// B 16 x N. The operands after the R accumulators: desc-a %R, desc-b %R+1, scale-d's register
// %R+2 (1: accumulate), the transpose immediates %R+3 and %R+4 (0: K-major, 1: MN-major).
template <int N>
struct WgmmaSs;
// One wgmma of shape m64n<N>k16 on element type T (the PTX spelling: bf16 or f16).
#define WB_WGMMA_SS_ASM(N, R, IA, IB, IS, ITA, ITB, T)            \
  asm volatile(                                                   \
      "{\n"                                                       \
      ".reg .pred p;\n"                                           \
      "setp.ne.b32 p, %" #IS                                      \
      ", 0;\n"                                                    \
      "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #T "." #T \
      "\n"                                                        \
      "{" WB_WGMMA_P##R                                           \
      "},\n"                                                      \
      "%" #IA ", %" #IB ", p, 1, 1, %" #ITA ", %" #ITB            \
      ";\n"                                                       \
      "}\n"                                                       \
      : WB_WGMMA_C##R(d)                                          \
      : "l"(desc_a), "l"(desc_b), "r"(1), "n"(kTransA), "n"(kTransB))
#define WB_WGMMA_SS_SHAPE(N, R, IA, IB, IS, ITA, ITB)                                             \
  template <>                                                                                     \
  struct WgmmaSs<N> {                                                                             \
    template <class In, int kTransA, int kTransB>                                                 \
    __device__ static __forceinline__ void run(float (&d)[R], uint64_t desc_a, uint64_t desc_b) { \
      if constexpr (std::is_same_v<In, __nv_bfloat16>) {                                          \
        WB_WGMMA_SS_ASM(N, R, IA, IB, IS, ITA, ITB, bf16);                                        \
      } else {                                                                                    \
        WB_WGMMA_SS_ASM(N, R, IA, IB, IS, ITA, ITB, f16);                                         \
      }                                                                                           \
    }                                                                                             \
  };
// The shapes the kernels use (chapter 5: 256; chapter 9's tiles: the rest). Another N (a
// multiple of 8 up to 256) is one more line.
WB_WGMMA_SS_SHAPE(24, 12, 12, 13, 14, 15, 16)
WB_WGMMA_SS_SHAPE(56, 28, 28, 29, 30, 31, 32)
WB_WGMMA_SS_SHAPE(72, 36, 36, 37, 38, 39, 40)
WB_WGMMA_SS_SHAPE(96, 48, 48, 49, 50, 51, 52)
WB_WGMMA_SS_SHAPE(128, 64, 64, 65, 66, 67, 68)
WB_WGMMA_SS_SHAPE(160, 80, 80, 81, 82, 83, 84)
WB_WGMMA_SS_SHAPE(208, 104, 104, 105, 106, 107, 108)
WB_WGMMA_SS_SHAPE(256, 128, 128, 129, 130, 131, 132)
#undef WB_WGMMA_SS_SHAPE

// d (64 x N, N / 2 FP32 per thread) += A (64 x 16) * B (16 x N), In = __half or __nv_bfloat16.
// kTransA / kTransB = 0: the operand is K-major in shared memory (rows of K, 128-byte swizzle),
// 1: MN-major (rows of M or N). Issue between wgmma_fence() and wgmma_commit().
template <class In, int N, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b) {
  static_assert(std::is_same_v<In, __nv_bfloat16> || std::is_same_v<In, __half>, "16-bit inputs");
  WgmmaSs<N>::template run<In, kTransA, kTransB>(d, desc_a, desc_b);
}

// --- the pipeline ----------------------------------------------------------------------------
// kStages shared-memory stages, each with a "full" barrier (count 1: the producer's arrive,
// plus the TMA bytes it expects) and an "empty" barrier (one arrive per consumer warp). The
// producer and each consumer walk the stages in the same order, each with its own PipeState.
template <int kStages>
struct PipeState {
  int stage = 0;
  uint32_t phase = 0;  // parity of the stage's current round: flips each time the ring wraps
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) stage = 0, phase ^= 1;
  }
};

// The producer's part of one tile (one thread): for each of the `ktiles` steps along K, wait
// until every consumer warp released the stage, announce `tx_bytes`, and let load(stage, kt,
// full_bar_address) issue the TMA copies that complete on that barrier.
template <int kStages, class Load>
__device__ __forceinline__ void produce_tile(PipeState<kStages>& ps, uint64_t* full_bar, uint64_t* empty_bar,
                                             int ktiles, uint32_t tx_bytes, Load&& load) {
  using wb::ptx::smem_u32;
  for (int kt = 0; kt < ktiles; ++kt) {
    mbar_wait(smem_u32(&empty_bar[ps.stage]), ps.phase ^ 1);  // every consumer warp released this stage
    mbar_arrive_expect_tx(smem_u32(&full_bar[ps.stage]), tx_bytes);
    load(ps.stage, kt, smem_u32(&full_bar[ps.stage]));
    ps.advance();
  }
}

// The block's start: thread 0 initialises the stages' barriers (full: count 1, the producer's
// arrive plus its TMA bytes; empty: one arrive per consumer warp, `consumer_warps`) and makes
// them visible to the copy engine; then every thread waits for it.
template <int kStages>
__device__ __forceinline__ void init_stage_barriers(uint64_t* full_bar, uint64_t* empty_bar, int consumer_warps) {
  using wb::ptx::smem_u32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);
      mbar_init(smem_u32(&empty_bar[s]), consumer_warps);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
}

// The producer warpgroup of a persistent grid: its registers go to the consumers (setmaxnreg
// down to 40), and its thread 0 walks the CTA's tiles (blockIdx.x, then + gridDim.x): for each,
// where(tile) says where the tile lies (any type), and produce_tile runs its `ktiles` steps,
// with load(where, stage, kt, full_bar_address) issuing a stage's copies.
template <int kStages, class Where, class Load>
__device__ __forceinline__ void run_producer(uint64_t* full_bar, uint64_t* empty_bar, int tiles, int ktiles,
                                             uint32_t tx_bytes, Where&& where, Load&& load) {
  setmaxnreg_dec<40>();
  if (threadIdx.x == 0) {
    PipeState<kStages> ps;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const auto at = where(tile);
      produce_tile(ps, full_bar, empty_bar, ktiles, tx_bytes,
                   [&](int s, int kt, uint32_t bar) { load(at, s, kt, bar); });
    }
  }
}

// A consumer warpgroup's part of one tile: for each step along K, wait for the stage's bytes,
// let math(stage) issue its wgmmas into d, commit them, and wait until the previous step's
// wgmmas are done reading their stage (wgmma.wait_group 1) before that stage is released. On
// return every wgmma of the tile has completed and every stage it used is released. d is
// not zeroed here.
template <int kStages, int R, class Math>
__device__ __forceinline__ void consume_tile(PipeState<kStages>& ps, uint64_t* full_bar, uint64_t* empty_bar,
                                             int ktiles, float (&d)[R], Math&& math) {
  using wb::ptx::smem_u32;
  const int lane = threadIdx.x % 32;
  auto release = [&](int s) {  // this warp is done with stage s
    if (lane == 0) mbar_arrive(smem_u32(&empty_bar[s]));
  };
  int held = -1;  // the stage whose wgmmas may still be reading shared memory
  for (int kt = 0; kt < ktiles; ++kt) {
    mbar_wait(smem_u32(&full_bar[ps.stage]), ps.phase);  // the TMA bytes of this stage have landed
    pin(d);
    wgmma_fence();
    math(ps.stage);
    wgmma_commit();
    wgmma_wait<1>();  // the previous step's wgmmas are done reading their stage
    pin(d);
    if (held >= 0) release(held);
    held = ps.stage;
    ps.advance();
  }
  wgmma_wait<0>();
  pin(d);
  if (held >= 0) release(held);
}

// Tile index -> (block row bm, block column bn), in groups of kGroupM block rows: consecutive
// CTAs share B's columns while they last in L2.
template <int kGroupM>
__device__ __forceinline__ void grouped_tile(int tile, int tiles_m, int tiles_n, int& bm, int& bn) {
  const int per_group = kGroupM * tiles_n, group = tile / per_group;
  const int first_m = group * kGroupM, rows = min(tiles_m - first_m, kGroupM);
  bm = first_m + (tile % per_group) % rows;
  bn = (tile % per_group) / rows;
}

// The accumulators of a warpgroup's 64 x N tile (the mma.sync layout, per warp): warp w holds
// rows 16 w .. 16 w + 15; in each 8-column chunk j, d[4 j], d[4 j + 1] are row g, columns
// 8 j + 2 q, + 1 and d[4 j + 2], d[4 j + 3] row g + 8 (g = lane / 4, q = lane % 4). Calls
// f(r, c, lo, hi) for each chunk: lo = (d(r, c), d(r, c + 1)), hi = the same of row r + 8,
// where (r, c) is the place in the output of the tile's (row0, col0) corner plus the offsets.
template <int R, class F>
__device__ __forceinline__ void for_each_pair(const float (&d)[R], int row0, int col0, F&& f) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int r = row0 + warp * 16 + (lane >> 2), c = col0 + 2 * (lane & 3);
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    f(r, c + 8 * j, make_float2(d[4 * j], d[4 * j + 1]), make_float2(d[4 * j + 2], d[4 * j + 3]));
  }
}

// The same walk for an epilogue that loaded a value pair per column pair before the K loop
// (Epilogue::kColumnsAhead, below): f(r, c, lo, hi, cols[j]), cols[j] the pair of columns
// (c, c + 1) of chunk j.
template <int R, class F>
__device__ __forceinline__ void for_each_pair(const float (&d)[R], const float2 (&cols)[R / 4], int row0, int col0,
                                              F&& f) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int r = row0 + warp * 16 + (lane >> 2), c = col0 + 2 * (lane & 3);
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    f(r, c + 8 * j, make_float2(d[4 * j], d[4 * j + 1]), make_float2(d[4 * j + 2], d[4 * j + 3]), cols[j]);
  }
}

// An epilogue that reads one value per output column (a bias) may declare
// `static constexpr bool kColumnsAhead = true` and `float2 columns(int c)` (the values of
// columns c and c + 1): the kernel then loads a consumer thread's column pairs before the
// tile's K loop, so their latency hides behind the wgmmas instead of standing between the last
// wgmma and the stores, and calls epi(r, c, lo, hi, cols) with them.
template <class E>
concept ColumnsAhead = E::kColumnsAhead;

// --- a whole GEMM on two K-major operands ------------------------------------------------------
// y (M, N) = epilogue(x (M, K) · W (N, K)ᵀ): A = x and B = Wᵀ are both read as rows of K (B's
// "columns" are W's rows), so both descriptors are K-major (imm-trans-a = imm-trans-b = 0).
// A (BM, BN) block tile, 64 deep along K per stage; one producer warpgroup and two consumer
// warpgroups, laid out as (BM / 64) x (128 / BM): BM = 128 splits the rows (each consumer
// 64 x BN), BM = 64 splits the columns (each 64 x BN / 2). kStages stages of
// (BM + BN) x 128 bytes, each box 1024-byte aligned (the 128-byte swizzle repeats every 8 rows).
template <int BM_, int BN_, int kStages_>
struct KMajorTile {
  static constexpr int BM = BM_, BN = BN_, BK = 64, kStages = kStages_;
  static constexpr int kConsumers = 2, kThreads = (1 + kConsumers) * 128;
  static constexpr int CM = BM / 64, CN = kConsumers / CM;  // consumer warpgroups along M and N
  static constexpr int WN = BN / CN;                        // one consumer's columns: its wgmma's N
  static constexpr int kAcc = WN / 2;                       // FP32 accumulators per thread
  static constexpr int kABytes = BM * BK * 2, kBBytes = BN * BK * 2;
  static constexpr int kSmem = kStages * (kABytes + kBBytes) + 1024;  // + 1024 for the alignment
  static_assert(BM == 64 || BM == 128, "one or two 64-row consumer slices");
  static_assert(WN % 8 == 0 && WN >= 8 && WN <= 256, "wgmma's N: a multiple of 8 up to 256");
  static_assert(BN <= 256, "one TMA box of B: at most 256 rows");
  static_assert((WN * BK * 2) % 1024 == 0, "each consumer's B rows start on a swizzle period");
  static_assert(kStages >= 2 && kSmem <= 227 * 1024, "fits an SM");
};

// grid: at most one CTA per tile (persistent: a CTA walks tiles blockIdx.x, + gridDim.x, ...),
// block Tile::kThreads, dynamic shared memory Tile::kSmem. map_a: x as K x M boxes of
// (64, BM); map_b: W as K x N boxes of (64, BN) (make_tensor_map_2d). TMA fills zeros past M,
// N and K, so edge tiles take the same path; the epilogue skips what lies outside y.
// epi(r, c, lo, hi), called by each consumer thread per for_each_pair chunk: the epilogue
// and the store (rows r, r + 8, columns c, c + 1; any of them may lie past M or N).
template <class Tile, class In, class Epilogue, int kGroupM = 8>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    kmajor_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M,
                       int N, int K, const Epilogue epi) {
#if defined(WB_SM90A_GEMM)
  using wb::ptx::smem_u32;
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, kStages = Tile::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  auto a_stage = [&](int s) { return base + uint32_t(s * Tile::kABytes); };                            // (BM, 64) of x
  auto b_stage = [&](int s) { return base + uint32_t(kStages * Tile::kABytes + s * Tile::kBBytes); };  // (BN, 64) of W

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
  const int ktiles = (K + BK - 1) / BK;  // the last stage's columns past K arrive as zeros
  const int warpgroup = threadIdx.x / 128;

  init_stage_barriers<kStages>(full_bar, empty_bar, Tile::kConsumers * 4);

  if (warpgroup == 0) {
    // Producer: one thread issues every copy; the warpgroup's registers go to the consumers.
    run_producer<kStages>(
        full_bar, empty_bar, tiles, ktiles, Tile::kABytes + Tile::kBBytes,
        [&](int tile) {
          int2 at;  // (block row, block column)
          grouped_tile<kGroupM>(tile, tiles_m, tiles_n, at.x, at.y);
          return at;
        },
        [&](int2 at, int s, int kt, uint32_t bar) {
          tma_load_2d(a_stage(s), &map_a, kt * BK, at.x * BM, bar);
          tma_load_2d(b_stage(s), &map_b, kt * BK, at.y * BN, bar);
        });
  } else {
    // Consumers: warpgroup 1 + cm * CN + cn computes rows 64 cm .. 64 cm + 63 and columns
    // WN cn .. WN cn + WN - 1 of each tile.
    setmaxnreg_inc<232>();
    const int cw = warpgroup - 1, cm = cw / Tile::CN, cn = cw % Tile::CN;
    PipeState<kStages> ps;
    float d[Tile::kAcc];
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int bm, bn;
      grouped_tile<kGroupM>(tile, tiles_m, tiles_n, bm, bn);
#pragma unroll
      for (int i = 0; i < Tile::kAcc; ++i) d[i] = 0.0f;
      auto math = [&](int s) {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
          // K-major, 128-byte swizzle: 8-row groups 1024 bytes apart; 16 more k = 32 bytes on.
          const uint64_t desc_a = make_desc(a_stage(s) + uint32_t(cm * 64 * 128 + kk * 32), 16, 1024);
          const uint64_t desc_b = make_desc(b_stage(s) + uint32_t(cn * Tile::WN * 128 + kk * 32), 16, 1024);
          wgmma_ss<In, Tile::WN, 0, 0>(d, desc_a, desc_b);
        }
      };
      if constexpr (ColumnsAhead<Epilogue>) {
        const int col0 = bn * BN + cn * Tile::WN;
        float2 cols[Tile::kAcc / 4];  // column pairs col0 + 2 q + 8 j, loaded ahead of the K loop
#pragma unroll
        for (int j = 0; j < Tile::kAcc / 4; ++j) cols[j] = epi.columns(col0 + 2 * (threadIdx.x % 4) + 8 * j);
        consume_tile(ps, full_bar, empty_bar, ktiles, d, math);
        for_each_pair(d, cols, bm * BM + cm * 64, col0, epi);
      } else {
        consume_tile(ps, full_bar, empty_bar, ktiles, d, math);
        // The epilogue on the registers, while the producer already fills the next tile's stages.
        for_each_pair(d, bm * BM + cm * 64, bn * BN + cn * Tile::WN, epi);
      }
    }
  }
#else
  __trap();  // built for sm_90a only; its launchers never run it elsewhere
#endif
}

// --- host ------------------------------------------------------------------------------------

// The TMA descriptor of a row-major matrix of 16-bit elements (In = __half or __nv_bfloat16):
// `outer` rows of `inner` elements, read in (box_inner x box_outer) boxes, box_inner * 2 <= 128
// bytes, with the 128-byte swizzle; zeros outside the matrix. Needs a 16-byte aligned base and
// inner % 8 == 0 (row strides in multiples of 16 bytes). `who` names the caller in the error.
template <class In>
CUtensorMap make_tensor_map_2d(const In* base, uint64_t inner, uint64_t outer, uint32_t box_inner, uint32_t box_outer,
                               const char* who) {
  static_assert(std::is_same_v<In, __nv_bfloat16> || std::is_same_v<In, __half>, "16-bit elements");
  CUtensorMap map;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * sizeof(In)};  // bytes from one row to the next
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUtensorMapDataType type =
      std::is_same_v<In, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = tensor_map_encoder()(&map, type, 2, const_cast<In*>(base), dims, strides, box, element_strides,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error(std::string(who) + ": cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                             ")");
  }
  return map;
}

}  // namespace wb::sm90
