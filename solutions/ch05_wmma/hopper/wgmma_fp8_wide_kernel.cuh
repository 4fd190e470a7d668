// The FP8 kernel of the Hopper steps v16 (per-tensor scales) and v17 (block scales): v9's
// pipeline (hopper/wgmma_8bit_kernel.cuh: TMA into 128-byte swizzled stages 128 deep, full /
// empty mbarriers, one producer warpgroup and two consumer warpgroups of 64 rows, a persistent
// grid in groups of 8 block rows, the tensor core's partial sums promoted into FP32 every 128
// of K), with a wider tile, a TMA-store epilogue and (kCluster = 2, v16) clusters of two CTAs
// that share B's box. One template for both scale forms.
//
// What differs from v9 / v12, and why:
//   * A 128 x 192 tile: each consumer warpgroup owns 64 x 192 and issues wgmma m64n192k32. Per
//     multiply-add the tensor cores then read about 11 % fewer bytes of shared memory (A's 2 KB
//     of a wgmma serve 192 columns instead of 128), and the copies write 17 % fewer (a stage of
//     40 KB serves 3.1 M multiply-adds instead of 32 KB for 2.1 M), as many fewer from L2. The
//     promotion decides the width: `total` and one `part` of 64 x kBN floats per warpgroup are
//     kBN registers per thread, and 2 x 96 = 192 of the 232 that setmaxnreg gives a consumer is
//     the widest that fits (v12's third set would need 288). So the promotion waits for its
//     stage (wait_group 0, as v9), and the other consumer warpgroup's wgmmas keep the tensor
//     cores busy meanwhile.
//   * The next tile's first stage is issued before a tile's stores (v12's order), so the tensor
//     cores have work while the epilogue runs.
//   * The epilogue through shared memory and TMA stores (v6's): each consumer rounds its
//     64 x kBN tile, times the scales, into 64-column boxes in the 128-byte swizzle and one
//     thread stores them; the boxes clip at D's edges. 48 KB for both consumers at kBN = 192,
//     so 4 stages of 40 KB.
//   * kCluster = 2: the grid runs in clusters of two CTAs that take neighbouring block rows of
//     one block column. Each CTA loads A's box for itself and half of the B box (96 rows) with
//     a multicast copy that lands in both CTAs and completes on both CTAs' full barrier, which
//     expects the whole stage as before. A stage of either CTA is written by both producers, so
//     its empty barrier counts the consumer warps of both (each arrives on its own CTA's barrier
//     and, through mapa, on the peer's). A cluster barrier after the barriers' setup and one
//     before the exit keep each CTA's shared memory alive while the other may still write to it.
//   * Block scales (v17) with a tile that is not one B block wide: a 192-column tile starts at
//     column 0 or 64 of a 128-column block of B, so its first 64 columns are always in block
//     nb0 = bn * 192 / 128, its last 64 always in nb0 + 1, and the middle 64 in one or the other
//     (by the parity of bn). Per stage a thread loads its two rows' A scales and the two B
//     scales, and each 8-column chunk takes one of three products, chosen at compile time for
//     all but the middle, which is one select per stage.
// Same sums in the same order as v9 / v10 (promotion every 128 of K, then the scales): the
// same error model (chapters/ch05_wmma/spec_fp8.cu).
//
// Built for sm_90a alone, like the other Hopper steps (chapters/ch05_wmma/extra.cmake).
#pragma once
#include "device/cluster.cuh"     // kCluster = 2: rank, sync, the launch
#include "device/wgmma_gemm.cuh"  // init_stage_barriers, run_producer, the wgmma operand lists, make_tensor_map_2d
#include "ladder.cuh"             // v12, v13: where D is not 16-byte aligned (no TMA store)
#include "wgmma_8bit_kernel.cuh"  // Params, tile_coords, make_map_8bit, MapCache

namespace ch05::solution::hopper::k8w {

using namespace wb::sm90;
using k8::Epi;
using k8::kBK;
using k8::kBM;
using k8::kConsumers;
using k8::kThreads;
using wb::ptx::smem_u32;

template <int kBN_>
struct WideCfg {
  static constexpr int kBN = kBN_;
  static constexpr int kAcc = kBN / 2;       // FP32 per thread for 64 x kBN
  static constexpr int kABytes = kBM * kBK;  // 16 KB
  static constexpr int kBBytes = kBN * kBK;  // kBN rows of 128 bytes
  static constexpr int kDBox = 64 * 128;     // a 64 x 64 BF16 box of D, 8 KB
  static constexpr int kDBoxes = kBN / 64;   // per consumer warpgroup
  static constexpr int kDBytes = kConsumers * kDBoxes * kDBox;
  static constexpr int kStages = (227 * 1024 - 1024 - 256 - kDBytes) / (kABytes + kBBytes);
  static constexpr int kSmem = kStages * (kABytes + kBBytes) + kDBytes + 1024;  // + 1024 for the alignment
  static_assert(kBN % 64 == 0 && kBN <= 192, "64-column output boxes; total + part must fit 232 registers");
  static_assert(kStages >= 3, "a pipeline");
};

// wgmma m64nNk32, E4M3 x E4M3 -> FP32, both operands K-major from shared memory. scale_d = 0:
// d = A * B; 1: d += A * B.
#define CH05_WGMMA_E4M3(N, R, IA, IB, IS)     \
  asm volatile(                               \
      "{\n"                                   \
      ".reg .pred p;\n"                       \
      "setp.ne.b32 p, %" #IS                  \
      ", 0;\n"                                \
      "wgmma.mma_async.sync.aligned.m64n" #N  \
      "k32.f32.e4m3.e4m3\n"                   \
      "{" WB_WGMMA_P##R "},\n%" #IA ", %" #IB \
                        ", p, 1, 1;\n"        \
                        "}\n"                 \
      : WB_WGMMA_C##R(d)                      \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))
template <int N>
__device__ __forceinline__ void wgmma_e4m3(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  if constexpr (N == 192) {
    CH05_WGMMA_E4M3(192, 96, 96, 97, 98);
  } else {
    static_assert(N == 128, "the widths the steps use");
    CH05_WGMMA_E4M3(128, 64, 64, 65, 66);
  }
}
#undef CH05_WGMMA_E4M3

// The block scales of K block kt for one thread: its rows r, r + 8 (zero past M) times B's
// scales of the tile's column blocks. lo0 / hi0: the tile's first block, lo1 / hi1: the next
// (zero past N), lom / him: whichever holds the middle 64 columns (kBN = 192).
struct BlockScales {
  float lo0, hi0, lo1, hi1, lom, him;
};
template <int kBN>
__device__ __forceinline__ BlockScales block_scales(const k8::Params& p, int bn, int kt, int r) {
  const int c0 = bn * kBN, nb0 = c0 / kFp8ScaleBlock;
  const float sb0 = __ldg(p.scale_b + size_t(nb0) * p.ld_b + kt);
  const float* sa = p.scale_a + size_t(kt) * p.M;
  const float a_lo = r < p.M ? __ldg(sa + r) : 0.0f;
  const float a_hi = r + 8 < p.M ? __ldg(sa + r + 8) : 0.0f;
  BlockScales s{a_lo * sb0, a_hi * sb0, 0.0f, 0.0f, 0.0f, 0.0f};
  if constexpr (kBN > kFp8ScaleBlock) {
    const bool next = (nb0 + 1) * kFp8ScaleBlock < p.N;
    const float sb1 = next ? __ldg(p.scale_b + size_t(nb0 + 1) * p.ld_b + kt) : 0.0f;
    s.lo1 = a_lo * sb1, s.hi1 = a_hi * sb1;
    const bool odd = c0 % kFp8ScaleBlock != 0;  // the tile starts 64 columns into block nb0
    s.lom = odd ? s.lo1 : s.lo0, s.him = odd ? s.hi1 : s.hi0;
  }
  return s;
}

// total += part (v16) or part times its chunk's scales (v17). Chunk j holds columns 8j .. 8j + 7
// of the tile: part[4j], part[4j + 1] row r, part[4j + 2], part[4j + 3] row r + 8.
template <Epi kEpi, int kAcc>
__device__ __forceinline__ void promote(float (&total)[kAcc], const float (&part)[kAcc], const BlockScales& s) {
#pragma unroll
  for (int j = 0; j < kAcc / 4; ++j) {
    // Which block chunk j is in (v17): the first if it is there at either start (0 or 64;
    // always for a tile one block wide), the second if at both, the middle's otherwise.
    const bool first = kAcc * 2 <= kFp8ScaleBlock || 8 * j + 64 < kFp8ScaleBlock;  // (j: unrolled)
    const bool second = !first && 8 * j >= kFp8ScaleBlock;
    const float lo = first ? s.lo0 : second ? s.lo1 : s.lom, hi = first ? s.hi0 : second ? s.hi1 : s.him;
#pragma unroll
    for (int i = 4 * j; i < 4 * j + 4; ++i) {
      const float scale = i < 4 * j + 2 ? lo : hi;  // rows r, r + 8
      if constexpr (kEpi == Epi::Fp8Tensor) {
        total[i] += part[i];
      } else {
        total[i] = fmaf(part[i], scale, total[i]);
      }
    }
  }
}

// Clusters of two CTAs (kCluster = 2) that share B's box: each loads half of its rows and the
// copy engine writes them into both CTAs (.multicast::cluster, ctaMask 0b11), completing on the
// barrier at the same offset in each.
__device__ __forceinline__ void tma_load_2d_both(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
      "%3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(uint16_t(3))
      : "memory");
}
// An arrive on the barrier at shared address `bar` of CTA `rank` of the cluster (a plain arrive:
// a consumer that only read the stage has nothing to release).
__device__ __forceinline__ void mbar_arrive_in(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

// Two FP32 values rounded to a BF16 pair, into shared memory at `addr`.
__device__ __forceinline__ void st_shared_bf16x2(uint32_t addr, float v0, float v1) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(*reinterpret_cast<const uint32_t*>(&h)) : "memory");
}

template <Epi kEpi, int kBN, int kCluster>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_fp8_wide_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          const __grid_constant__ CUtensorMap map_d, const k8::Params p) {
#if defined(CH05_SM90A_8BIT)
  using C = WideCfg<kBN>;
  constexpr int kStages = C::kStages, kAcc = C::kAcc;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  // Stage s: A's box (128 rows of 128 bytes) at a_base + s * kABytes, B's (kBN rows) at
  // b_base + s * kBBytes; the output boxes after them. 1024-byte aligned: the swizzle's period.
  const uint32_t a_base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t b_base = a_base + uint32_t(kStages * C::kABytes), d_base = b_base + uint32_t(kStages * C::kBBytes);
  // Work units: tiles, or with kCluster = 2 one tile per CTA of a cluster, the two in
  // neighbouring block rows of one block column (one B box): unit u is tile row
  // kCluster * bm2 + u % kCluster of pair u / kCluster, the pairs in v9's order. (An odd last
  // block row gets a partner past M: zeros in, nothing stored.)
  const int tiles_m = (p.M + kBM * kCluster - 1) / (kBM * kCluster), tiles_n = (p.N + kBN - 1) / kBN;
  const int tiles = tiles_m * tiles_n * kCluster, ktiles = (p.K + kBK - 1) / kBK;  // past K: zeros
  auto unit_at = [=](int unit) {
    int2 at;  // (block row, block column)
    k8::tile_coords(unit / kCluster, tiles_m, tiles_n, at.x, at.y);
    at.x = at.x * kCluster + unit % kCluster;
    return at;
  };
  // Both CTAs' consumers release a stage that both producers write into.
  init_stage_barriers<kStages>(full_bar, empty_bar, kConsumers * 4 * kCluster);
  const uint32_t rank = kCluster > 1 ? wb::cluster::rank() : 0;
  if constexpr (kCluster > 1) wb::cluster::sync();  // the peer's barriers are ready

  if (threadIdx.x < 128) {
    // Producer: one thread issues A's and B's box of every stage.
    run_producer<kStages>(full_bar, empty_bar, tiles, ktiles, C::kABytes + C::kBBytes, unit_at,
                          [&](int2 at, int s, int kt, uint32_t bar) {
                            tma_load_2d(a_base + uint32_t(s * C::kABytes), &map_a, kt * kBK, at.x * kBM,
                                        bar);  // (K offset, row)
                            if constexpr (kCluster > 1) {
                              constexpr int kHalf = kBN / kCluster;  // this CTA's rows of B, into both CTAs
                              tma_load_2d_both(b_base + uint32_t(s * C::kBBytes + rank * kHalf * kBK), &map_b, kt * kBK,
                                               at.y * kBN + int(rank) * kHalf, bar);
                            } else {
                              tma_load_2d(b_base + uint32_t(s * C::kBBytes), &map_b, kt * kBK, at.y * kBN, bar);
                            }
                          });
    return;
  }

  // Consumers: warpgroup 1 computes rows 0-63 of each tile, warpgroup 2 rows 64-127.
  setmaxnreg_inc<232>();
  const int cw = threadIdx.x / 128 - 1, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;  // fragment row group and column pair
  const bool leader = threadIdx.x % 128 == 0;
  const uint32_t my_d = d_base + uint32_t(cw * C::kDBoxes * C::kDBox);
  float total[kAcc], part[kAcc];
  PipeState<kStages> ps;
  int held = 0;  // the stage whose wgmmas are in flight
  // One stage's four wgmmas (k = 0, 32, 64, 96) into part, the first with scale-d = 0.
  auto issue = [&] {
    held = ps.stage;
    mbar_wait(smem_u32(&full_bar[ps.stage]), ps.phase);
    pin(part);
    wgmma_fence();
    const uint32_t a = a_base + uint32_t(ps.stage * C::kABytes + cw * 64 * 128);
    const uint32_t b = b_base + uint32_t(ps.stage * C::kBBytes);
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk) {
      wgmma_e4m3<kBN>(part, make_desc(a + kk * 32, 16, 1024), make_desc(b + kk * 32, 16, 1024), kk > 0);
    }
    wgmma_commit();
    ps.advance();
  };
  // Wait for the stage in flight, hand its slot back, add its part into total.
  auto retire = [&](const BlockScales& s) {
    wgmma_wait<0>();
    pin(part);
    if (lane == 0) {
      mbar_arrive(smem_u32(&empty_bar[held]));
      if constexpr (kCluster > 1) mbar_arrive_in(smem_u32(&empty_bar[held]), rank ^ 1u);
    }
    promote<kEpi>(total, part, s);
  };

  if (int(blockIdx.x) >= tiles) return;
  issue();
  // Every path into the loop body has exactly one stage in flight, and the way out none: an
  // order of groups that ptxas can follow (otherwise it serializes every wgmma, C7514).
  for (int tile = blockIdx.x;; tile += int(gridDim.x)) {
    const int2 at = unit_at(tile);
    const int bm = at.x, bn = at.y;
    const int r = bm * kBM + cw * 64 + warp * 16 + g;  // this thread's rows: r and r + 8
#pragma unroll
    for (int i = 0; i < kAcc; ++i) total[i] = 0.0f;
    // v17: a stage's scales are loaded before its wait, so that their latency hides behind it.
    auto scales = [&](int kt) {
      BlockScales s{};
      if constexpr (kEpi == Epi::Fp8Block) s = block_scales<kBN>(p, bn, kt, r);
      return s;
    };
    for (int kt = 0; kt + 1 < ktiles; ++kt) {
      retire(scales(kt));
      issue();
    }
    retire(scales(ktiles - 1));

    // Epilogue: into this warpgroup's boxes (box j / 8, 16-byte chunk j % 8 of the row, swizzled
    // by the row: rows g and g + 8 are both g modulo 8), then one thread's TMA stores.
    auto epilogue = [&] {
      float s = 1.0f;
      if constexpr (kEpi == Epi::Fp8Tensor) s = __ldg(p.scale_a) * __ldg(p.scale_b);
      const int row = warp * 16 + g;
      if (leader) bulk_wait_read();  // the last tile's stores have read the boxes
      warpgroup_barrier(1 + cw);
#pragma unroll
      for (int j = 0; j < kAcc / 4; ++j) {
        const uint32_t at = my_d + uint32_t((j / 8) * C::kDBox + swizzle128_offset(row, j % 8) + q * 4);
        st_shared_bf16x2(at, total[4 * j] * s, total[4 * j + 1] * s);
        st_shared_bf16x2(at + 8 * 128, total[4 * j + 2] * s, total[4 * j + 3] * s);
      }
      fence_async_shared();
      warpgroup_barrier(1 + cw);
      if (leader) {
#pragma unroll
        for (int b = 0; b < C::kDBoxes; ++b) {
          tma_store_2d(&map_d, my_d + uint32_t(b * C::kDBox), bn * kBN + b * 64, bm * kBM + cw * 64);
        }
        bulk_commit();
      }
    };
    // The next tile's first stage goes in before the stores, so that the tensor cores have work
    // during them. (The stores touch `total` alone, so ptxas accepts the one `if` here: no C7514.)
    const bool more = tile + int(gridDim.x) < tiles;
    if (more) issue();
    epilogue();
    if (!more) break;
  }
  if (leader) bulk_wait_all();  // shared memory must outlive the stores
  // The peer may still write into this CTA's stages and arrive on its barriers until its
  // consumers are done: leave together.
  if constexpr (kCluster > 1) wb::cluster::sync();
#else
  __trap();  // built for sm_90a only; the launchers never run it elsewhere
#endif
}

// --- host side ------------------------------------------------------------------------------

// The maps of the last problem (A, B and D), so that timing a call does not time their encoding.
struct WideMaps {
  k8::MapCache ab;
  const void* d = nullptr;
  CUtensorMap map_d{};
};

// v16 (kEpi = Fp8Tensor), v17 (Fp8Block): the argument checks, then the kernel, or `fallback`
// (v12, v13) where D is not 16-byte aligned (TMA stores need it). `who` names the step.
template <Epi kEpi, int kBN, int kCluster = 1>
void run(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
         const float* scale_b, __nv_bfloat16* D, cudaStream_t stream, const char* who, Fp8GemmFn* fallback) {
  using C = WideCfg<kBN>;
  check_fp8_gemm_args(M, N, K, who);
  check_tma_pointers(A, B, who);
  if (M == 0 || N == 0) return;
  require_wgmma(who);
  if (reinterpret_cast<uintptr_t>(D) % 16 != 0) {
    fallback(M, N, K, A, B, scale_a, scale_b, D, stream);
    return;
  }
  static WideMaps maps;
  k8::MapCache& c = maps.ab;
  if (c.a != A || c.b != B || c.m != M || c.n != N || c.k != K || maps.d != D) {
    c.map_a = k8::make_map_8bit(A, uint64_t(K), uint64_t(M), kBM, who);             // A: M rows of K
    c.map_b = k8::make_map_8bit(B, uint64_t(K), uint64_t(N), kBN / kCluster, who);  // B: N rows of K
    maps.map_d = make_tensor_map_2d(D, uint64_t(N), uint64_t(M), 64, 64, who);      // D: M rows of N, 64 x 64 boxes
    c.a = A, c.b = B, c.m = M, c.n = N, c.k = K, maps.d = D;
  }
  auto* kernel = &wgmma_fp8_wide_kernel<kEpi, kBN, kCluster>;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem));
    return true;
  }();
  (void)raised;
  const int ld_b = kEpi == Epi::Fp8Block ? fp8_scale_b_ld(K) : 0;
  const k8::Params p{M, N, K, scale_a, scale_b, ld_b, D, nullptr, nullptr};
  const long long units = (long long)((M + kBM * kCluster - 1) / (kBM * kCluster)) * ((N + kBN - 1) / kBN);
  if constexpr (kCluster == 1) {
    const int grid = static_cast<int>(std::min<long long>(units, wb::sm_count()));  // persistent: one block per SM
    kernel<<<grid, kThreads, C::kSmem, stream>>>(c.map_a, c.map_b, maps.map_d, p);
    WB_CHECK_LAUNCH();
  } else {
    // As many clusters as the GPU holds at once (its SMs pair up within their GPCs).
    static const int fit = wb::cluster::max_active(kernel, kThreads, kCluster, C::kSmem);
    const int clusters = static_cast<int>(std::min<long long>(units, fit));
    if (clusters == 0) throw std::runtime_error(std::string(who) + ": no cluster of two such CTAs fits this GPU");
    const wb::cluster::Config config(dim3(clusters * kCluster), kThreads, kCluster, stream, C::kSmem);
    CUDA_CHECK(cudaLaunchKernelEx(config.get(), kernel, c.map_a, c.map_b, maps.map_d, p));
  }
}

}  // namespace ch05::solution::hopper::k8w
