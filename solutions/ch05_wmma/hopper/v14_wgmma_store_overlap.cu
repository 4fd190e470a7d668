// v14 (bonus, Hopper sm_90a only) — v6 with each consumer's epilogue overlapping the other
// consumer's main loop, and stream-K for a last wave that would leave SMs idle.
//
// What v6 does at the end of a tile: both consumer warpgroups finish the tile's last stage at the
// same moment (they wait on the same full barriers), then both round their 64 x 256 accumulators
// into shared memory and hand them to a TMA store. For that time no wgmma is issued on the SM:
// the tensor cores idle once per tile, four times per SM at 4096^3.
//
// What changes:
//   * one 32 KB output buffer instead of v6's two (one 64 x 256 half tile, four swizzled 64 x 64
//     TMA boxes), taken by the consumers in turn: consumer 0's half of tile t, consumer 1's half
//     of tile t, consumer 0's half of tile t + 1, ... Two mbarriers order the turns ("free[c]":
//     consumer c may write; "full": a half is written).
//   * a store thread: warp 1 of the producer warpgroup (idle in v6) waits for "full", issues the
//     four TMA stores, waits until they have read shared memory (cp.async.bulk.wait_group.read),
//     and passes the buffer to the other consumer ("free"). The consumers never wait for a store.
//   * the turns set the consumers apart in time: at the first tile consumer 1 waits until
//     consumer 0's half has been written and read, and from then on consumer 1 runs that much
//     behind. While one consumer writes its half, the other is still issuing wgmmas (its last
//     stages, or the next tile's first), so the tensor pipe has work through every epilogue. The
//     offset keeps itself: while one consumer is in its epilogue the other has the tensor cores
//     to itself and gains back the time it will lose in its own.
//   * the 32 KB saved buys a fourth stage (4 x 48 KB + 32 KB = 224 KB): a consumer may now run up
//     to two stages ahead of the other without waiting for data.
//   * the half tile goes to shared memory with stmatrix (four 8 x 8 blocks per instruction, 16
//     bytes per lane) instead of v6's 4-byte st.shared: a quarter of the instructions.
//   * stream-K (Split, below) where the last wave of tiles is short enough to leave SMs idle for
//     a good part of a tile: at 8192^3 (2,048 tiles on 132 SMs) the last wave has 68 tiles, and
//     v6 leaves 64 SMs idle for a whole tile's time; v14 shares those 68 tiles' stages out over
//     all 132 CTAs. Not at 4096^3 (512 tiles: 116 in the last wave), where the partial sums'
//     round trip costs more than the 16 idle SMs lose (measured: see docs/ch05-wmma.md).
// What stays: v6's tile (128 x 256, 64 deep per stage), copies, wgmmas and tile order; FP32
// outputs and D = A * B + C take v6's kernel (the launcher, v14_wgmma_store_overlap.cu, decides).
// Without stream-K the sums are v6's, in the same order: the same results bit for bit; with it a
// tile's sum is two or three parts added in a fixed order (deterministic, and within the same
// FP32 error bound).
//
// Shared memory: 4 stages x (A 16 KB + B 32 KB), the 32 KB output half, 1 KB for the alignment.
// Global scratch for stream-K: 128 KB of partial sums and two flags per CTA, made once by the
// step's prepare (store_overlap_prepare).
// The form measured beside it, v14_wgmma_store_overlap_sk, takes stream-K wherever it can.
//
// Run: build/ch05/bin/ch05_bench --op=gemm/bf16_bf16 --shape=4096 --impl=reference,v6_wgmma_tma,v14_wgmma_store_overlap
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "device/sm90.cuh"
#include "device/wgmma_gemm.cuh"
#include "hopper.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "wgmma_tma_tile.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CH05_SM90A_V14 1
#endif

namespace ch05::solution::hopper {
namespace {

using namespace tile16;  // the 128 x 256 tile, its stage's wgmmas and copies (wgmma_tma_tile.cuh)
using wb::ptx::smem_u32;

constexpr int kStages = 4;
constexpr int kSmem = kStages * (kABytes + kBBytes) + kDHalfBytes + 1024;  // + 1024 for the alignment
static_assert(kSmem <= 227 * 1024, "fits an SM");
constexpr int kPartFloats = 64 * kBN;  // one consumer's 64 x 256 FP32 partial sum
enum class StreamK { Never, WhereItPays, Always };

// The tile order. Without stream-K: CTA b takes tiles b, b + grid, b + 2 grid, ... (v6's walk).
// With stream-K: the tiles of the whole waves are walked like that, and the last, partial wave's
// tiles are cut along K into equal shares of stages, one per CTA, so that every CTA ends at about
// the same time (8192^3: 2,048 tiles on 132 SMs, 15 whole waves and 68 tiles = 8,704 stages of
// 65 or 66 per CTA, where the last wave would have left 64 SMs idle for a whole tile). A tile
// cut in pieces is finished by the CTA that has its first stage (its "owner", which reaches it
// at the end of its share); the others write their FP32 partial sums to a workspace and raise a
// flag that the owner waits for before it adds them, in CTA order, and stores the tile.
struct Split {
  int whole_tiles;  // tiles walked whole (all of them without stream-K)
  int units;        // stages of the remaining tiles, shared out over the CTAs (0: none)
  float* partial;   // [grid][2 consumers][64 x 256] partial sums
  unsigned* flag;   // [grid][2 consumers]: 1 while a partial sum waits for its owner
};
enum class Piece { Whole, Part, Owner };  // a whole tile; stages kb.. of a tile; stages 0..ke of a tile
struct Item {
  int tile, kb, ke;
  Piece piece;
};
__device__ __forceinline__ int share_start(const Split& sp, int cta) {
  return int((long long)sp.units * cta / gridDim.x);
}
// This CTA's items in order: its whole tiles, then its share of the last wave's stages.
struct Walk {
  int next_whole, u, end;
  __device__ explicit Walk(const Split& sp)
      : next_whole(blockIdx.x), u(share_start(sp, blockIdx.x)), end(share_start(sp, blockIdx.x + 1)) {}
  __device__ bool next(const Split& sp, int ktiles, Item& it) {
    if (next_whole < sp.whole_tiles) {
      it = Item{next_whole, 0, ktiles, Piece::Whole};
      next_whole += gridDim.x;
      return true;
    }
    if (u >= end) return false;
    const int t = u / ktiles, kb = u - t * ktiles, ke = min(ktiles, kb + (end - u));
    it = Item{sp.whole_tiles + t, kb, ke, kb > 0 ? Piece::Part : (ke == ktiles ? Piece::Whole : Piece::Owner)};
    u += ke - kb;
    return true;
  }
};

// The stream-K flags: raised by the store thread once the consumers' partial-sum stores are done
// (they arrive on an mbarrier; the store thread waits, fences and releases the flag at GPU scope,
// so that the consumers themselves never wait for their stores), waited for with acquire
// semantics by the owner, and cleared by it for the next launch.
__device__ __forceinline__ void flag_release(unsigned* f) {
  __threadfence();
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(f), "r"(1u) : "memory");
}
__device__ __forceinline__ void flag_acquire_and_clear(unsigned* f) {
  unsigned v = 0;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(f) : "memory");
  } while (v == 0);
  *f = 0;
}

template <class In>
__global__ void __launch_bounds__(kThreads, 1)
    store_overlap_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                         const __grid_constant__ CUtensorMap map_d, int M, int N, int K, const Split split) {
#if defined(CH05_SM90A_V14)
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[kStages], empty_bar[kStages];
  __shared__ __align__(8) uint64_t out_full, out_free[kConsumers];  // the output buffer's turns
  __shared__ __align__(8) uint64_t part_done[kConsumers];           // stream-K: a partial sum is stored
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;      // the 128 B swizzle repeats every 1024 bytes
  auto a_stage = [&](int s) { return base + uint32_t(s * kABytes); };
  auto b_stage = [&](int s) { return base + uint32_t(kStages * kABytes + s * kBBytes); };
  const uint32_t out = base + uint32_t(kStages * (kABytes + kBBytes));  // one 64 x 256 half tile

  const int tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  const int ktiles = (K + kBK - 1) / kBK;
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), 1);                // the producer's arrive (plus the TMA bytes)
      mbar_init(smem_u32(&empty_bar[s]), kConsumers * 4);  // one arrive per consumer warp
    }
    mbar_init(smem_u32(&out_full), 128);  // every thread of the consumer whose turn it is
    for (int c = 0; c < kConsumers; ++c) {
      mbar_init(smem_u32(&out_free[c]), 1);     // the store thread
      mbar_init(smem_u32(&part_done[c]), 128);  // every thread of consumer c (once per launch at most)
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      // The copies, as v6.
      PipeState<kStages> ps;
      Walk walk(split);
      Item it;
      while (walk.next(split, ktiles, it)) {
        int bm, bn;
        grouped_tile<kGroupM>(it.tile, tiles_m, tiles_n, bm, bn);
        produce_tile(ps, full_bar, empty_bar, it.ke - it.kb, kABytes + kBBytes, [&](int stage, int kt, uint32_t bar) {
          load_stage(a_stage(stage), b_stage(stage), &map_a, &map_b, bm, bn, it.kb + kt, bar);
        });
      }
    } else if (threadIdx.x == 32) {
      // The stores: turn e is consumer e % 2's half of the CTA's tile e / 2. The buffer's
      // "full" barrier completes once per turn, so turn e waits for phase parity e % 2.
      uint32_t turn = 0;
      Walk walk(split);
      Item it;
      while (walk.next(split, ktiles, it)) {
        if (it.piece == Piece::Part) {
          // Written to the workspace by the consumers: publish it to the owner.
          for (int c = 0; c < kConsumers; ++c) {
            mbar_wait(smem_u32(&part_done[c]), 0);
            flag_release(split.flag + blockIdx.x * kConsumers + c);
          }
          continue;
        }
        int bm, bn;
        grouped_tile<kGroupM>(it.tile, tiles_m, tiles_n, bm, bn);
        for (int c = 0; c < kConsumers; ++c, ++turn) {
          mbar_wait(smem_u32(&out_full), turn & 1);
#pragma unroll
          for (int b = 0; b < kBN / 64; ++b) {
            tma_store_2d(&map_d, out + uint32_t(b * kDBoxBytes), bn * kBN + b * 64, bm * kBM + c * 64);
          }
          bulk_commit();
          bulk_wait_read();                                        // the boxes have left shared memory
          mbar_arrive(smem_u32(&out_free[(c + 1) % kConsumers]));  // the other consumer's turn
        }
      }
      bulk_wait_all();  // shared memory must outlive the stores
    }
  } else {
    // Consumers: warpgroup 1 computes rows 0-63 of each tile, warpgroup 2 rows 64-127.
    setmaxnreg_inc<232>();
    const int cw = warpgroup - 1;
    PipeState<kStages> ps;
    float d[128];
    const int t = threadIdx.x % 128;
    uint32_t done = 0;  // this consumer's tiles stored so far
    Walk walk(split);
    Item it;
    while (walk.next(split, ktiles, it)) {
#pragma unroll
      for (int i = 0; i < 128; ++i) d[i] = 0.0f;
      consume_tile(ps, full_bar, empty_bar, it.ke - it.kb, d,
                   [&](int stage) { mma_stage<In>(d, a_stage, b_stage, stage, cw); });
      // Stream-K: a partial sum. Each thread keeps its own 128 values in its own places (float4
      // j of thread t at j * 128 + t: a warp's stores are 512 contiguous bytes), so the owner's
      // thread t reads exactly what it adds.
      auto slot = [&](int cta) {
        return reinterpret_cast<float4*>(split.partial + (size_t(cta) * kConsumers + cw) * kPartFloats);
      };
      if (it.piece == Piece::Part) {
        float4* mine = slot(blockIdx.x);
#pragma unroll
        for (int j = 0; j < 32; ++j)
          __stcg(mine + j * 128 + t, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
        mbar_arrive(smem_u32(&part_done[cw]));  // the store thread publishes it
        continue;
      }
      if (it.piece == Piece::Owner) {
        // The tile's later stages were done by the next CTAs, whose shares start inside it.
        const int tile_end = (it.tile - split.whole_tiles + 1) * ktiles;
        for (int cta = blockIdx.x + 1; cta < int(gridDim.x) && share_start(split, cta) < tile_end; ++cta) {
          if (t == 0) flag_acquire_and_clear(split.flag + cta * kConsumers + cw);
          warpgroup_barrier(1 + cw);
          const float4* theirs = slot(cta);
#pragma unroll
          for (int j = 0; j < 32; ++j) {
            const float4 v = __ldcg(theirs + j * 128 + t);
            d[4 * j] += v.x, d[4 * j + 1] += v.y, d[4 * j + 2] += v.z, d[4 * j + 3] += v.w;
          }
        }
      }
      // Its turn at the buffer. out_free[0] completes after each of consumer 1's halves has been
      // read, out_free[1] after each of consumer 0's: consumer 0's turn j needs j completions of
      // out_free[0] (none for j = 0: parity 1 passes on a fresh barrier), consumer 1's turn j
      // needs j + 1 of out_free[1]. Neither barrier can be more than one phase from that count.
      mbar_wait(smem_u32(&out_free[cw]), (done + 1 - cw) & 1);
      stage_tile_stmatrix<In>(d, out);   // 4 swizzled boxes of 64 x 64 (wgmma_gemm.cuh)
      fence_async_shared();              // visible to the copy engine ...
      mbar_arrive(smem_u32(&out_full));  // ... before the store thread issues the stores
      ++done;
    }
  }
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// The stream-K workspace, made by the step's prepare (never inside a call: the tests
// capture the call in a graph, where no allocation may happen), and never freed.
struct Workspace {
  int slots = 0;  // CTAs it has room for
  wb::DeviceBuffer<float> partial;
  wb::DeviceBuffer<unsigned> flag;
};
Workspace& workspace() {
  static auto* w = new Workspace();
  return *w;
}

template <class In>
void launch(int M, int N, int K, const In* A, const In* B, In* D, StreamK stream_k, cudaStream_t stream,
            const char* who) {
  static MapCache<In> cache;
  cache.update(A, B, M, N, K, who);
  cache.update_d(D, M, N, who);
  auto* kernel = &store_overlap_kernel<In>;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    return true;
  }();
  (void)raised;
  const long long tiles = (long long)((M + kBM - 1) / kBM) * ((N + kBN - 1) / kBN);
  const int grid = static_cast<int>(std::min<long long>(tiles, wb::sm_count()));  // persistent: one block per SM
  const int ktiles = (K + kBK - 1) / kBK;
  Split split{static_cast<int>(tiles), 0, nullptr, nullptr};
  // Stream-K where the last wave leaves SMs idle for at least 16 stages each on average (8192^3:
  // 64 idle SMs x 128 stages; 4096^3: 16 x 64, under the line: the partial sums' round trip
  // through L2 costs more than they save), and each CTA's share covers at least a quarter of a
  // tile (a tile then has at most five pieces). kAlways (the _sk form): wherever it can.
  const Workspace& ws = workspace();
  const long long rest = tiles % grid;
  const bool worth = (grid - rest) * ktiles >= 16LL * grid;
  if (stream_k != StreamK::Never && ws.slots >= grid && tiles > grid && rest * 4 >= grid && ktiles >= 8 &&
      (worth || stream_k == StreamK::Always)) {
    split.whole_tiles = static_cast<int>(tiles - rest);
    split.units = static_cast<int>(rest * ktiles);
    split.partial = const_cast<float*>(ws.partial.data());
    split.flag = const_cast<unsigned*>(ws.flag.data());
  }
  kernel<<<grid, kThreads, kSmem, stream>>>(cache.map_a, cache.map_b, cache.map_d, M, N, K, split);
  WB_CHECK_LAUNCH();
}

}  // namespace

void store_overlap_prepare(cudaStream_t stream) {
  Workspace& w = workspace();
  const int slots = wb::sm_count();
  if (w.slots >= slots) return;
  w.partial = wb::DeviceBuffer<float>(size_t(slots) * kConsumers * kPartFloats);
  w.flag = wb::DeviceBuffer<unsigned>(size_t(slots) * kConsumers);
  CUDA_CHECK(cudaMemsetAsync(w.flag.data(), 0, w.flag.bytes(), stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  w.slots = slots;
}

template <class In, class Out>
void gemm_store_overlap(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, StoreOverlap form,
                        cudaStream_t stream) {
  // The staged TMA-store epilogue: 16-bit outputs (D has the inputs' type), no C to add, and a
  // 16-byte aligned D. Anything else is v6's register epilogue.
  if constexpr (std::is_same_v<In, Out>) {
    if (C == nullptr && reinterpret_cast<uintptr_t>(D) % 16 == 0) {
      launch<In>(M, N, K, A, B, D, form == StoreOverlap::AlwaysStreamK ? StreamK::Always : StreamK::WhereItPays, stream,
                 "v14_wgmma_store_overlap");
      return;
    }
  }
  gemm<In, Out>(M, N, K, A, B, C, D, stream);
}

#define CH05_V14_INSTANTIATE(In, Out)                                                                            \
  template void gemm_store_overlap<In, Out>(int, int, int, const In*, const In*, const Out*, Out*, StoreOverlap, \
                                            cudaStream_t)
CH05_V14_INSTANTIATE(__half, float);
CH05_V14_INSTANTIATE(__half, __half);
CH05_V14_INSTANTIATE(__nv_bfloat16, float);
CH05_V14_INSTANTIATE(__nv_bfloat16, __nv_bfloat16);
#undef CH05_V14_INSTANTIATE

}  // namespace ch05::solution::hopper
