// v2 — shared-memory staging: a block of 2 x 2 warps shares its tiles of A and B.
//
// What changes over v1: the block computes a 32 x 32 tile of D. For each step of 32 along K
// its 128 threads copy the 32 x 32 tile of A and the 32 x 32 tile of B into shared memory
// once (coalesced loads, zeros past the edges, so every shape takes the same path), wait at
// a barrier, and each warp loads its fragments from shared memory: the A fragments are
// shared by the two warps of a block row, the B fragments by the two warps of a block
// column. Global traffic per multiply-add halves, and the fragment loads hit shared memory
// instead of L1/L2.
// The tiles are kept as 16-column "panels" with padded rows (wmma_common.cuh): every
// fragment starts on a 32-byte boundary, for INT8 too, and a fragment load touches
// distinct banks.
// Why it is still far from the tensor cores' rate: one fragment per warp, one mma per load
// pair, 2-byte element copies, and the whole block waits at each barrier for the next tile.
// Measured on an H100 it is even a little slower than v1, whose re-reads hit L1: staging
// pays once each warp reuses its fragments (v3) and the copies are wide (v3) and
// asynchronous (v4).
//
// From wmma_common.cuh: the panel layout, the scalar tile loaders, write_tile and the launch
// over the block tiles of D (launch_block_tiles).
//
// Run: build/ch05/bin/ch05_bench --impl=v2_wmma_smem,v1_wmma_global,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "wmma_common.cuh"

namespace ch05::solution {
namespace {

using namespace nvcuda;

constexpr int kBM = 32, kBN = 32, kBK = 32;  // block tile of D, and the step along K
constexpr int kThreads = 128;                // 2 x 2 warps, one 16 x 16 fragment each
static_assert(kBM % 16 == 0 && kBN % 16 == 0 && kBK % 16 == 0, "tiles are made of 16 x 16 fragments");
static_assert((kBM / 16) * (kBN / 16) * 32 == kThreads, "one warp per fragment of the block tile");

template <class In, class Out>
__global__ void __launch_bounds__(kThreads)
    wmma_smem_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
  if constexpr (has_tensor_cores<In>()) {
    using E = frag_t<In>;
    using Acc = acc_t<In>;
    constexpr int ld = kPanelRow<In>;
    __shared__ __align__(32) In sA[(kBK / 16) * kBM * ld];  // (kBM x kBK) tile of A, in panels
    __shared__ __align__(32) In sB[(kBN / 16) * kBK * ld];  // (kBK x kBN) tile of B, in panels
    __shared__ __align__(32) Acc scratch[kThreads / 32][256];

    const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> acc;
    wmma::fill_fragment(acc, Acc(0));
    for (int k0 = 0; k0 < K; k0 += kBK) {
      load_a_scalar<In, kBM, kBK, kThreads>(sA, A, M, K, row0, k0);
      load_b_scalar<In, kBK, kBN, kThreads>(sB, B, K, N, k0, col0);
      __syncthreads();  // the tiles are complete
      for (int kk = 0; kk < kBK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major> b;
        wmma::load_matrix_sync(a, reinterpret_cast<const E*>(sA + a_panel<In, kBM>(wm * 16, kk * 16)), ld);
        wmma::load_matrix_sync(b, reinterpret_cast<const E*>(sB + b_panel<In, kBK>(kk * 16, wn * 16)), ld);
        wmma::mma_sync(acc, a, b, acc);
      }
      __syncthreads();  // everyone is done with the tiles before they are overwritten
    }
    write_tile<In, Out>(acc, scratch[warp], row0 + wm * 16, col0 + wn * 16, M, N, C, D);
  } else {
    __trap();  // not reached: the tests skip GPUs without tensor cores for In
  }
}

}  // namespace

CH05_LAUNCHER(v2_wmma_smem) {
  launch_block_tiles<kBM, kBN>(
      M, N, [&](dim3 grid) { wmma_smem_kernel<In, Out><<<grid, kThreads, 0, stream>>>(M, N, K, A, B, C, D); });
}

CH05_INSTANTIATE_ALL(v2_wmma_smem);

}  // namespace ch05::solution
