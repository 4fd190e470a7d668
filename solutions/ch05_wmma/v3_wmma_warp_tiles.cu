// v3 — warp tiles: 128 x 128 block tiles, each of 8 warps computes 64 x 32 of them.
//
// What changes over v2: each warp keeps a 64 x 32 tile of D in registers as 4 x 2
// accumulator fragments. Per step of 16 along K it loads 4 A fragments and 2 B fragments
// and issues 8 mma_sync: each fragment loaded from shared memory now feeds 2 or 4 mmas
// instead of one, and the 8 independent mmas keep the tensor cores busy while the next
// fragments load. The block tile grows to 128 x 128, so each element of A and B read from
// global memory serves 128 multiply-adds (v2: 32).
// Where K and N allow it (multiples of 16 bytes), tiles are copied with 16-byte vector
// loads; otherwise element by element (a second instantiation of the same kernel).
// Why it is not yet fast: the loads of the next tile start only after the current one
// is used up; warps wait at each barrier for global memory (v4 overlaps the two).
//
// From wmma_common.cuh: the panel layout, the tile loaders, and the warp tile's reset, its
// fragments and products over one staged tile (mma_warp_tile) and its epilogue (zero_tiles,
// write_tiles); the launch over the block tiles of D as v2 (launch_block_tiles).
//
// Run: build/ch05/bin/ch05_bench --impl=v3_wmma_warp_tiles,v2_wmma_smem,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "wmma_common.cuh"

namespace ch05::solution {
namespace {

using namespace nvcuda;

constexpr int kBM = 128, kBN = 128, kBK = 32;            // block tile of D, and the step along K
constexpr int kWarpsM = 2, kWarpsN = 4;                  // 8 warps
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // 64 x 32 warp tile
constexpr int kFM = kWM / 16, kFN = kWN / 16;            // 4 x 2 fragments per warp
constexpr int kThreads = kWarpsM * kWarpsN * 32;
static_assert(kBK % 16 == 0 && kWM % 16 == 0 && kWN % 16 == 0, "tiles are made of 16 x 16 fragments");

template <class In, class Out, bool kVector>
__global__ void __launch_bounds__(kThreads)
    wmma_warp_tiles_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
  if constexpr (has_tensor_cores<In>()) {
    using Acc = acc_t<In>;
    constexpr int ld = kPanelRow<In>;
    __shared__ __align__(32) In sA[(kBK / 16) * kBM * ld];  // (kBM x kBK) tile of A, in panels
    __shared__ __align__(32) In sB[(kBN / 16) * kBK * ld];  // (kBK x kBN) tile of B, in panels
    __shared__ __align__(32) Acc scratch[kThreads / 32][256];

    const int warp = threadIdx.x / 32, wm = warp / kWarpsN, wn = warp % kWarpsN;
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;

    AccFragment<In> acc[kFM][kFN];
    zero_tiles<In>(acc);
    AFragment<In> a[kFM];  // one k step's fragments
    BFragment<In> b[kFN];

    for (int k0 = 0; k0 < K; k0 += kBK) {
      if constexpr (kVector) {
        load_a_vec<In, kBM, kBK, kThreads>(sA, A, M, K, row0, k0);
        load_b_vec<In, kBK, kBN, kThreads>(sB, B, K, N, k0, col0);
      } else {
        load_a_scalar<In, kBM, kBK, kThreads>(sA, A, M, K, row0, k0);
        load_b_scalar<In, kBK, kBN, kThreads>(sB, B, K, N, k0, col0);
      }
      __syncthreads();
      mma_warp_tile<In, kBM, kBK, kWM, kWN>(acc, a, b, sA, sB, wm, wn);
      __syncthreads();
    }
    write_tiles<In, Out>(acc, scratch[warp], row0 + wm * kWM, col0 + wn * kWN, M, N, C, D);
  } else {
    __trap();  // not reached: the tests skip GPUs without tensor cores for In
  }
}

}  // namespace

CH05_LAUNCHER(v3_wmma_warp_tiles) {
  launch_block_tiles<kBM, kBN>(M, N, [&](dim3 grid) {
    if (rows_aligned(A, B, N, K)) {
      wmma_warp_tiles_kernel<In, Out, true><<<grid, kThreads, 0, stream>>>(M, N, K, A, B, C, D);
    } else {
      wmma_warp_tiles_kernel<In, Out, false><<<grid, kThreads, 0, stream>>>(M, N, K, A, B, C, D);
    }
  });
}

CH05_INSTANTIATE_ALL(v3_wmma_warp_tiles);

}  // namespace ch05::solution
