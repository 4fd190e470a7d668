// v1 — WMMA, one warp per 16 x 16 tile of D, fragments loaded straight from global memory.
//
// What changes over chapter 4: the multiply-adds run on the tensor cores. A warp holds a
// 16 x 16 tile of D as a wmma::fragment<accumulator>; for each step of 16 along K it loads a
// 16 x 16 fragment of A and one of B with load_matrix_sync and issues one mma_sync — 4096
// multiply-adds in a single warp-wide instruction sequence instead of 4096 / 32 FMAs per lane.
// Edges: load_matrix_sync needs the whole 16 x 16 inside the matrix, a 32-byte aligned start
// and a row length (ldm) that is a multiple of 16 bytes. Where that fails (the last partial
// tiles, or K or N not a multiple of 8), the warp first copies the tile into its own 16 x 16
// patch of shared memory, with zeros outside the matrix, and loads the fragment from there.
// Why it is still slow: nothing is shared between warps. Every warp reads its A and B
// fragments from global memory (through L1/L2) for itself, 32 bytes per row at a time, and
// has one mma in flight: the tensor cores wait on memory nearly all the time.
//
// Run: build/ch05/bin/ch05_bench --impl=v1_wmma_global,reference
#include "runtime/errors.cuh"
#include "ladder.cuh"
#include "wmma_common.cuh"

namespace ch05::solution {
namespace {

using namespace nvcuda;

constexpr int kWarps = 4;  // four independent warps per block, side by side along N

// Copies the 16 x 16 tile of a rows x cols row-major matrix at (r0, c0) into `patch`
// (row-major, ldm 16), zeros outside the matrix. Called by all 32 lanes of a warp.
template <class In>
__device__ void stage_patch(In* patch, const In* X, int rows, int cols, int r0, int c0) {
  const int lane = threadIdx.x % 32;
  for (int e = lane; e < 256; e += 32) {
    const int r = r0 + e / 16, c = c0 + e % 16;
    patch[e] = (r < rows && c < cols) ? X[size_t(r) * cols + c] : zero<In>();
  }
  __syncwarp();
}

// The 16 x 16 tile of X (rows x cols, row-major) at (r0, c0) into `frag`: straight from
// global memory when `direct` (inside the matrix, ldm a multiple of 16 bytes) and the tile
// starts 32-byte aligned, through `patch` otherwise. Called by all 32 lanes of a warp.
template <class Frag, class In>
__device__ __forceinline__ void load_tile_frag(Frag& frag, const In* X, int rows, int cols, int r0, int c0, bool direct,
                                               In* patch) {
  using E = frag_t<In>;
  const In* p = X + size_t(r0) * cols + c0;  // (16 x 16) tile of X at (r0, c0)
  if (direct && reinterpret_cast<uintptr_t>(p) % 32 == 0) {
    wmma::load_matrix_sync(frag, reinterpret_cast<const E*>(p), cols);
  } else {
    stage_patch(patch, X, rows, cols, r0, c0);
    wmma::load_matrix_sync(frag, reinterpret_cast<const E*>(patch), 16);
  }
}

template <class In, class Out>
__global__ void __launch_bounds__(kWarps * 32)
    wmma_global_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
  if constexpr (has_tensor_cores<In>()) {
    using E = frag_t<In>;
    using Acc = acc_t<In>;
    __shared__ __align__(32) In patch_a[kWarps][256];  // one 16 x 16 patch per warp
    __shared__ __align__(32) In patch_b[kWarps][256];
    __shared__ __align__(32) Acc scratch[kWarps][256];

    const int warp = threadIdx.x / 32;
    const int row0 = blockIdx.y * 16, col0 = (blockIdx.x * kWarps + warp) * 16;
    if (col0 >= N) return;  // a warp past the right edge (no block-wide barrier follows)

    // Can the fragments come straight from global memory? (warp-uniform conditions)
    const bool a_rows_in = row0 + 16 <= M, b_cols_in = col0 + 16 <= N;
    const bool a_ldm_ok = (K * sizeof(In)) % 16 == 0, b_ldm_ok = (N * sizeof(In)) % 16 == 0;

    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> acc;
    wmma::fill_fragment(acc, Acc(0));
    for (int k0 = 0; k0 < K; k0 += 16) {
      const bool k_in = k0 + 16 <= K;
      wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major> b;

      load_tile_frag(a, A, M, K, row0, k0, a_rows_in && k_in && a_ldm_ok, patch_a[warp]);
      load_tile_frag(b, B, K, N, k0, col0, b_cols_in && k_in && b_ldm_ok, patch_b[warp]);
      wmma::mma_sync(acc, a, b, acc);
      __syncwarp();  // every lane has its fragments before a patch is overwritten
    }
    write_tile<In, Out>(acc, scratch[warp], row0, col0, M, N, C, D);
  } else {
    __trap();  // not reached: the tests skip GPUs without tensor cores for In
  }
}

}  // namespace

CH05_LAUNCHER(v1_wmma_global) {
  if (M <= 0 || N <= 0) return;
  const int tiles_n = (N + 15) / 16, tiles_m = (M + 15) / 16;
  const dim3 grid((tiles_n + kWarps - 1) / kWarps, tiles_m);
  wmma_global_kernel<In, Out><<<grid, kWarps * 32, 0, stream>>>(M, N, K, A, B, C, D);
  WB_CHECK_LAUNCH();
}

CH05_INSTANTIATE_ALL(v1_wmma_global);

}  // namespace ch05::solution
