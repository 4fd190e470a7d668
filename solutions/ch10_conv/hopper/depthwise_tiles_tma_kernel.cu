// v10 by TMA (Hopper sm_90a only) — the same tiles, patches and persistent grid as v10
// (v10_depthwise_tiles.cu, depthwise_tiles.cuh), with the copies given to the copy engine.
//
// What changed from v10: v10's threads issue ~20 cp.async each per tile (a chunk of 16 bytes,
// its source, its bounds check), about a tenth of the block's instructions, and only the
// first ~144 threads of a 256-thread block have any, so those warps reach the barrier last.
//   * x is a 4-D tensor (C, W, H, N) for the TMA unit; a tile's input is one box of (8 S
//     channels, 18 columns, 18 rows, 1 image) whose corner is (c0, w0 - 1, h0 - 1, n). The
//     corner may be negative and the box may run past the image: those elements arrive as
//     zeros, the padding for free. One thread issues it, after arming the buffer's mbarrier
//     with the box's bytes; every thread waits on that mbarrier (parity per buffer use).
//   * The box lands densely ([row][column][channels], the layout v10's copies write before
//     their swizzle), so the geometry here is unswizzled: with slabs of fewer than 64 channels
//     a shared load's lanes share banks two by two.
//   * One __syncthreads a tile, as in v10: after it every thread is done with the other buffer,
//     and the leader refills it (a proxy fence first: the generic reads, then the copy engine's
//     writes).
// Tensor maps need strides that are multiples of 16 bytes (C % 8 == 0) and below 2^40 bytes;
// a map the driver refuses makes depthwise_tiles_tma return false (the caller runs v10).
#include <cuda.h>

#include <cstdint>

#include "device/sm90.cuh"
#include "depthwise_tiles.cuh"
#include "hopper/hopper.cuh"

namespace ch10::solution::hopper {
namespace {

using namespace tiles;
using namespace wb::sm90;

// Tile tl's box into the buffer at shared address dst, completing on barrier bar. Leader only.
template <class G>
__device__ __forceinline__ void load_tile(const CUtensorMap* map, const tiles::Tile& tl, uint32_t dst, uint32_t bar) {
  fence_async_shared();
  mbar_arrive_expect_tx(bar, uint32_t(G::kChunks) * 16u);
  tma_load_4d(dst, map, tl.c0, tl.w0 - 1, tl.h0 - 1, tl.n, bar);
}

// v10's persistent loop with the loads by TMA. Shared memory: two buffers of G::kBufBytes,
// then their two mbarriers.
template <class G>
__global__ void __launch_bounds__(G::kThreads, G::kMinBlocks)
    tma_tiles_kernel(const __grid_constant__ CUtensorMap map, const bf16* __restrict__ w, bf16* __restrict__ y,
                     Tiles t) {
  extern __shared__ __align__(128) char smem[];
  const uint32_t base = wb::ptx::smem_u32(smem);
  const uint32_t bars = base + 2 * G::kBufBytes;  // buffer b's barrier at bars + 8 b
  unsigned i = blockIdx.x;
  if (i >= t.count) return;
  const bool leader = threadIdx.x == 0;
  if (leader) {
    mbar_init(bars, 1);
    mbar_init(bars + 8, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  tiles::Tile tl = tile_at<G>(t, i);
  if (leader) load_tile<G>(&map, tl, base, bars);
  PatchWorker<G> worker(t);
  uint32_t parity = 0;  // bit b: the phase of buffer b's barrier to wait for
  for (unsigned b = 0;; b ^= 1u) {
    mbar_wait(bars + 8 * b, (parity >> b) & 1u);  // tile i landed
    parity ^= 1u << b;
    __syncthreads();  // everyone done with tile i - 1: its buffer is free
    const unsigned next = i + gridDim.x;
    tiles::Tile tn{};
    if (next < t.count) {
      tn = tile_at<G>(t, next);
      if (leader) load_tile<G>(&map, tn, base + (b ^ 1u) * G::kBufBytes, bars + 8 * (b ^ 1u));
    }
    worker.run(w, y, t, tl, smem + b * G::kBufBytes);
    if (next >= t.count) break;
    i = next;
    tl = tn;
  }
}

template <int kS>
bool launch(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  using G = Geometry<kS, 4, false>;
  Tiles t;
  if (!make_tiles<G>(N, H, W, C, t)) return false;
  // x as (C, W, H, N), strides in bytes; the box (8 S, 18, tile rows + 2, 1).
  const cuuint64_t dims[4] = {cuuint64_t(C), cuuint64_t(W), cuuint64_t(H), cuuint64_t(N)};
  const cuuint64_t strides[3] = {cuuint64_t(C) * 2, cuuint64_t(W) * C * 2, cuuint64_t(H) * W * C * 2};
  const cuuint32_t box[4] = {cuuint32_t(8 * kS), cuuint32_t(kIn), cuuint32_t(G::kTileRows + 2), 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  CUtensorMap map;
  const CUresult r =
      tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<bf16*>(x), dims, strides, box,
                           element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return false;
  const unsigned grid = persistent_grid<G>(reinterpret_cast<const void*>(&tma_tiles_kernel<G>), t);
  tma_tiles_kernel<G><<<grid, G::kThreads, G::kSmem, stream>>>(map, w, y, t);
  WB_CHECK_LAUNCH();
  return true;
}

}  // namespace

bool depthwise_tiles_tma(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream) {
  constexpr decltype(&launch<1>) kLaunch[] = {&launch<1>, &launch<2>, &launch<4>, &launch<8>};
  // Slabs of at most 64 channels (v10's first measured form): the wide slabs' unswizzled
  // geometry needs more registers than the two blocks an SM would leave it.
  return kLaunch[slab_choice(C, false)](x, w, y, N, H, W, C, stream);
}

}  // namespace ch10::solution::hopper
