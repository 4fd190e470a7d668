// v6 (bonus, Hopper sm_90a only) — TMA + mbarriers + wgmma, producer/consumer warp groups.
//
// What changes over v5, piece by piece:
//   * TMA (cp.async.bulk.tensor): one thread asks the copy engine for a whole 2-D box of A
//     or B, described by a CUtensorMap made on the host (cuTensorMapEncodeTiled, reached
//     through cudaGetDriverEntryPointByVersion, so no link against libcuda). The engine
//     computes the addresses, fills zeros outside the matrix, and writes shared memory in
//     the 128-byte swizzled layout the tensor cores read. No thread spends instructions on
//     loads any more.
//   * mbarriers: a copy completes on a shared-memory barrier that counts the bytes that
//     arrived (expect_tx / complete_tx). Each stage has a "full" barrier (the data is in)
//     and an "empty" barrier (every consumer warp is done with it). Waits are on the
//     barrier's phase parity, which flips each time the barrier completes.
//   * wgmma.mma_async: a warpgroup (4 warps, 128 threads) multiplies a 64 x 256 x 16 step
//     in one instruction, reading A and B straight from shared memory through 64-bit
//     descriptors; the 64 x 256 FP32 accumulator lives in registers (128 per thread).
//     It is asynchronous: issue, commit a group, and wait only when the registers or the
//     shared memory are needed again (wgmma.wait_group 1 keeps one step in flight).
//   * warp specialisation: warpgroup 0 is the producer (one thread issues every TMA copy;
//     setmaxnreg gives its registers away, down to 40), warpgroups 1 and 2 are consumers,
//     each computing 64 rows of the 128 x 256 tile (setmaxnreg raises them to 232).
//   * a persistent grid: one block per SM walks over the tiles (grouped by 8 block rows for
//     L2 reuse), so the producer already fetches the next tile while the consumers write
//     the last one.
//   * a TMA-store epilogue (16-bit outputs without C): each consumer warpgroup rounds its
//     64 x 256 accumulators into a swizzled tile in shared memory, makes the writes visible
//     to the copy engine (fence.proxy.async), and one thread stores the tile with four TMA
//     boxes. The threads go back to the next tile's math at once instead of issuing 4-byte
//     stores that use half of each sector. The tile costs 64 KB, so the A/B pipeline has
//     3 stages instead of 4. Measured on an H100 at 4096^3 BF16: 200 us -> 181 us (0.88x ->
//     0.98x cuBLAS). FP32 outputs, or a C to add, keep the register epilogue.
// Shared-memory layout (4 stages, 48 KB each, 1024-byte aligned for the 128 B swizzle):
//   A stage: 128 rows x 64 K values, one TMA box, 128 bytes per row ("K-major").
//   B stage: four boxes of 64 K rows x 64 N values (128 bytes is the widest row a 128 B
//            swizzle allows), 8 KB apart. B is row-major in K, i.e. "MN-major": wgmma reads
//            it with the transpose flag set.
// Descriptors (PTX ISA, "matrix descriptor"): bits 0-13 start address >> 4, 16-29 leading
// byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 swizzle (1 = 128 B).
//   A (K-major, 128 B swizzle): stride byte offset 1024 (from one 8-row group to the next);
//     the leading offset is unused; each step of 16 along K advances the start by 32 bytes.
//   B (MN-major, 128 B swizzle): leading byte offset 8192 (from one 64-column box to the
//     next), stride byte offset 1024 (from one group of 8 K rows to the next); each step of
//     16 along K advances the start by 16 rows = 2048 bytes.
//
// The reusable pieces (the wgmma wrapper, the full/empty pipeline's producer and consumer
// loops, the tile order, the tensor-map setup) live in harness/device/wgmma_gemm.cuh, where
// chapter 9's prefill GEMM (v12_wgmma_epilogue) takes them too; this file puts them together
// with v6's own tile, B layout and epilogues. Moving them there left the PTX of every
// instantiation of this kernel unchanged, instruction for instruction.
//
// Run: build/ch05/bin/ch05_bench --impl=v6_wgmma_tma,v5_mma_sync,reference
//      cuobjdump --dump-sass build/ch05/bin/ch05_bench | grep -c HGMMA
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "runtime/errors.cuh"
#include "device/sm90.cuh"
#include "device/wgmma_gemm.cuh"
#include "hopper.cuh"
#include "mma_common.cuh"
#include "runtime/launch_helpers.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CH05_SM90A 1
#endif

namespace ch05::solution::hopper {
namespace {

using namespace wb::sm90;  // the PTX wrappers (harness/device/sm90.cuh)
using wb::ptx::smem_u32;

constexpr int kBM = 128, kBN = 256, kBK = 64;
constexpr int kConsumers = 2;                     // consumer warpgroups, 64 rows each
constexpr int kThreads = (1 + kConsumers) * 128;  // + the producer warpgroup
constexpr int kBoxN = 64;                         // columns of B per TMA box (128 bytes)
constexpr int kABytes = kBM * kBK * 2;            // 16 KB per stage
constexpr int kBBoxBytes = kBK * kBoxN * 2;       // 8 KB
constexpr int kBBytes = kBK * kBN * 2;            // 32 KB per stage
// The output tile staged for a TMA store (16-bit outputs without C): 4 boxes of 64 columns
// per consumer warpgroup, each 64 rows x 128 bytes, in the same 128-byte swizzle as B.
constexpr int kDBoxBytes = 64 * 128;                           // 8 KB
constexpr int kDBytes = kConsumers * (kBN / 64) * kDBoxBytes;  // 64 KB
// Stages of the A/B pipeline: 4 with the register epilogue; 3 when the output tile needs
// its 64 KB (4 x 48 + 64 KB would not fit in the 227 KB a block may use).
template <bool kTmaStore>
constexpr int kStagesOf = kTmaStore ? 3 : 4;
template <bool kTmaStore>
constexpr int kSmemBytesOf = kStagesOf<kTmaStore>*(kABytes + kBBytes) + (kTmaStore ? kDBytes : 0) + 1024;  // + align
constexpr int kGroupM = 8;
static_assert(kBM == 64 * kConsumers, "each consumer warpgroup owns 64 rows");
static_assert(kBK * 2 == 128, "one A row per 128-byte swizzle row");
static_assert(kBN % kBoxN == 0, "B is loaded in 64-column boxes");

// d (64 x 256 per warpgroup, 128 FP32 per thread) += A (64 x 16, K-major, imm-trans-a = 0)
// * B (16 x 256, MN-major, imm-trans-b = 1), both from shared memory through descriptors
// (wgmma_ss, harness/device/wgmma_gemm.cuh).
template <class In>
__device__ __forceinline__ void wgmma_step(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  wgmma_ss<In, 256, 0, 1>(d, desc_a, desc_b);
}

// Two accumulators rounded to a 16-bit pair, stored to shared memory at `addr`.
template <class Out>
__device__ __forceinline__ void st_shared_pair(uint32_t addr, float v0, float v1) {
  uint32_t bits;
  if constexpr (std::is_same_v<Out, __half>) {
    const __half2 h = __floats2half2_rn(v0, v1);
    bits = *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
    bits = *reinterpret_cast<const uint32_t*>(&h);
  }
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(bits) : "memory");
}

// kTmaStore: the epilogue stages the output tile in shared memory and writes it with TMA
// stores (16-bit outputs, no C); otherwise each thread stores its accumulators directly.
template <class In, class Out, bool kTmaStore>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                     const __grid_constant__ CUtensorMap map_d, int M, int N, int K, const Out* C, Out* D) {
#if defined(CH05_SM90A)
  constexpr int kStages = kStagesOf<kTmaStore>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[4], empty_bar[4];   // kStages of each are used
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // the 128 B swizzle repeats every 1024 bytes
  auto a_stage = [&](int s) { return base + uint32_t(s * kABytes); };
  auto b_stage = [&](int s) { return base + uint32_t(kStages * kABytes + s * kBBytes); };
  const uint32_t d_tile = base + uint32_t(kStages * (kABytes + kBBytes));  // kTmaStore only
  auto full = [&](int s) { return smem_u32(&full_bar[s]); };
  auto empty = [&](int s) { return smem_u32(&empty_bar[s]); };

  const int tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN, tiles = tiles_m * tiles_n;
  const int ktiles = (K + kBK - 1) / kBK;
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full(s), 1);                // the producer's arrive (plus the TMA bytes)
      mbar_init(empty(s), kConsumers * 4);  // one arrive per consumer warp
    }
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();

  if (warpgroup == 0) {
    // Producer: one thread issues every copy; the warpgroup's registers go to the consumers.
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      PipeState<kStages> ps;  // the pipeline's loop: harness/device/wgmma_gemm.cuh
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int bm, bn;
        grouped_tile<kGroupM>(tile, tiles_m, tiles_n, bm, bn);
        produce_tile(ps, full_bar, empty_bar, ktiles, kABytes + kBBytes, [&](int stage, int kt, uint32_t bar) {
          tma_load_2d(a_stage(stage), &map_a, kt * kBK, bm * kBM, bar);
#pragma unroll
          for (int j = 0; j < kBN / kBoxN; ++j) {
            tma_load_2d(b_stage(stage) + j * kBBoxBytes, &map_b, bn * kBN + j * kBoxN, kt * kBK, bar);
          }
        });
      }
    }
  } else {
    // Consumers: warpgroup 1 computes rows 0-63 of each tile, warpgroup 2 rows 64-127.
    setmaxnreg_inc<232>();
    const int cw = warpgroup - 1, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    PipeState<kStages> ps;
    float d[128];
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int bm, bn;
      grouped_tile<kGroupM>(tile, tiles_m, tiles_n, bm, bn);
#pragma unroll
      for (int i = 0; i < 128; ++i) d[i] = 0.0f;
      // Each stage: wait for its bytes, 4 wgmmas, commit, wait_group 1, release the stage before.
      consume_tile(ps, full_bar, empty_bar, ktiles, d, [&](int stage) {
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) {
          const uint64_t desc_a = make_desc(a_stage(stage) + cw * 64 * 128 + kk * 32, 16, 1024);
          const uint64_t desc_b = make_desc(b_stage(stage) + kk * 16 * 128, kBBoxBytes, 1024);
          wgmma_step<In>(d, desc_a, desc_b);
        }
      });

      // Epilogue. Warp w of the warpgroup holds rows 16w .. 16w + 15 of its 64; in each
      // 8-column chunk j, d[4j], d[4j + 1] are row g, columns 2q, 2q + 1 and d[4j + 2],
      // d[4j + 3] row g + 8 (g = lane / 4, q = lane % 4).
      if constexpr (kTmaStore) {
        // Into shared memory, then TMA stores: the warpgroup goes on to its next tile while
        // the copy engine writes this one (and clips it at the matrix's edges).
        const int g = lane >> 2, q = lane & 3, row = warp * 16 + g;  // row within the 64
        const uint32_t mine = d_tile + uint32_t(cw * (kBN / 64) * kDBoxBytes);
        if (threadIdx.x % 128 == 0) bulk_wait_read();  // the last tile's stores have read it
        warpgroup_barrier(1 + cw);
#pragma unroll
        for (int j = 0; j < kBN / 8; ++j) {
          // Box j / 8, 16-byte chunk j % 8 of the row, swizzled by the row (row % 8 == g).
          const uint32_t at = mine + uint32_t((j / 8) * kDBoxBytes + ((j % 8) ^ g) * 16 + q * 4);
          st_shared_pair<Out>(at + row * 128, d[4 * j], d[4 * j + 1]);
          st_shared_pair<Out>(at + (row + 8) * 128, d[4 * j + 2], d[4 * j + 3]);
        }
        fence_async_shared();
        warpgroup_barrier(1 + cw);
        if (threadIdx.x % 128 == 0) {
#pragma unroll
          for (int b = 0; b < kBN / 64; ++b) {
            tma_store_2d(&map_d, mine + uint32_t(b * kDBoxBytes), bn * kBN + b * 64, bm * kBM + cw * 64);
          }
          bulk_commit();
        }
      } else {
        // Straight from the registers; rows and columns outside D are skipped.
        const int r = bm * kBM + cw * 64 + warp * 16 + (lane >> 2);
        const int c0 = bn * kBN + 2 * (lane & 3);
#pragma unroll
        for (int j = 0; j < kBN / 8; ++j) {
          store_pair(D, C, M, N, r, c0 + j * 8, d[4 * j], d[4 * j + 1]);
          store_pair(D, C, M, N, r + 8, c0 + j * 8, d[4 * j + 2], d[4 * j + 3]);
        }
      }
    }
    if constexpr (kTmaStore) {
      if (threadIdx.x % 128 == 0) bulk_wait_all();  // shared memory must outlive the stores
    }
  }
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// A 2-D row-major tensor of 16-bit elements: `outer` rows of `inner` elements, read in
// (box_inner x box_outer) boxes with the 128-byte swizzle; zeros outside the tensor
// (make_tensor_map_2d, harness/device/wgmma_gemm.cuh).
template <class In>
CUtensorMap make_map(const In* base, uint64_t inner, uint64_t outer, uint32_t box_inner, uint32_t box_outer) {
  return make_tensor_map_2d(base, inner, outer, box_inner, box_outer, "v6_wgmma_tma");
}

// The maps of the last problem, so that timing a call does not time their encoding.
// map_d (the output, for the TMA-store epilogue) is made only for 16-bit outputs.
template <class In>
struct MapCache {
  const In* a = nullptr;
  const In* b = nullptr;
  const void* d = nullptr;
  int m = 0, n = 0, k = 0;
  CUtensorMap map_a{}, map_b{}, map_d{};
};

template <class In, class Out, bool kTmaStore>
void launch_with(const MapCache<In>& maps, int M, int N, int K, const Out* C, Out* D, cudaStream_t stream) {
  auto* kernel = &wgmma_tma_kernel<In, Out, kTmaStore>;
  constexpr int smem = kSmemBytesOf<kTmaStore>;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return true;
  }();
  (void)raised;
  const long long tiles = (long long)((M + kBM - 1) / kBM) * ((N + kBN - 1) / kBN);
  const int grid = static_cast<int>(std::min<long long>(tiles, wb::sm_count()));  // persistent: one block per SM
  kernel<<<grid, kThreads, smem, stream>>>(maps.map_a, maps.map_b, maps.map_d, M, N, K, C, D);
  WB_CHECK_LAUNCH();
}

template <class In, class Out>
void launch(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  // The TMA-store epilogue: 16-bit outputs (D has the inputs' type), no C to add, and a
  // 16-byte aligned D (its rows are, since N % 8 == 0).
  constexpr bool kSameType = std::is_same_v<In, Out>;
  const bool tma_store = kSameType && C == nullptr && reinterpret_cast<uintptr_t>(D) % 16 == 0;
  static MapCache<In> cache;
  if (cache.a != A || cache.b != B || cache.m != M || cache.n != N || cache.k != K) {
    cache.map_a = make_map(A, uint64_t(K), uint64_t(M), kBK, kBM);    // A: M rows of K
    cache.map_b = make_map(B, uint64_t(N), uint64_t(K), kBoxN, kBK);  // B: K rows of N
    cache.a = A, cache.b = B, cache.m = M, cache.n = N, cache.k = K;
    cache.d = nullptr;  // M or N may have changed
  }
  if constexpr (kSameType) {
    if (tma_store) {
      if (cache.d != D) {
        cache.map_d = make_map(static_cast<const In*>(D), uint64_t(N), uint64_t(M), 64, 64);  // D: M rows of N
        cache.d = D;
      }
      launch_with<In, Out, true>(cache, M, N, K, C, D, stream);
      return;
    }
  }
  launch_with<In, Out, false>(cache, M, N, K, C, D, stream);  // map_d unused
}

}  // namespace

bool supports(int, int N, int K, const void* A, const void* B) {
  return K % 8 == 0 && N % 8 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(B) % 16 == 0;
}

template <class In, class Out>
void gemm(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  launch<In, Out>(M, N, K, A, B, C, D, stream);
}

template void gemm<__half, float>(int, int, int, const __half*, const __half*, const float*, float*, cudaStream_t);
template void gemm<__half, __half>(int, int, int, const __half*, const __half*, const __half*, __half*, cudaStream_t);
template void gemm<__nv_bfloat16, float>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, const float*,
                                         float*, cudaStream_t);
template void gemm<__nv_bfloat16, __nv_bfloat16>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*,
                                                 const __nv_bfloat16*, __nv_bfloat16*, cudaStream_t);

}  // namespace ch05::solution::hopper
