// The pieces of a multi-stage mma.sync GEMM that do not depend on its tiles: the block's
// tile in L2-friendly launch order, the cp.async main loop with two fragment sets in flight,
// the accumulators' reset and the 16 x 8 x 16 tile products, and the launch with more than
// 48 KB of dynamic shared memory.
//
// Chapter 5 teaches them (v5_mma_sync: a BF16/FP16 GEMM on ldmatrix + mma.sync fed by a
// cp.async pipeline); chapter 9's prefill GEMM (linear/v8_mma_epilogue.cu) reuses them.
// Every device piece is __forceinline__: the kernel that calls it compiles as if the code
// stood in its body.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "device/async_copy.cuh"
#include "device/mma.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"

namespace wb::gemm {

// The (row0, col0) corner of this block's (BM, BN) tile from the linear block index, in
// groups of kGroupM block rows: the blocks running at the same time share columns of B
// (and rows of A) in L2.
struct TileCorner {
  int row0, col0;
};
template <int BM, int BN, int kGroupM>
__device__ __forceinline__ TileCorner grouped_tile(int M, int N) {
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = kGroupM * tiles_n, group = blockIdx.x / per_group;
  const int first_m = group * kGroupM, group_rows = min(tiles_m - first_m, kGroupM);
  const int bm = first_m + (blockIdx.x % per_group) % group_rows, bn = (blockIdx.x % per_group) / group_rows;
  return {bm * BM, bn * BN};
}

// Every accumulator of a warp tile (MT x NT mma tiles of 4 values) to zero.
template <class Acc, int MT, int NT>
__device__ __forceinline__ void zero_acc(Acc (&acc)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = Acc(0);
}

// One 16-deep step of a warp tile: acc[i][j] += a[i] * (n tile j), where b[j / 2] holds
// {b0, b1} of n tile j - j % 2 and then of n tile j - j % 2 + 1 (one ldmatrix.x4 of B).
template <class In, int MT, int NT>
__device__ __forceinline__ void mma_tiles_16816(float (&acc)[MT][NT][4], const uint32_t (&a)[MT][4],
                                                const uint32_t (&b)[NT / 2][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint32_t(&bj)[4] = b[j / 2];
      ptx::mma_16816<In>(acc[i][j], a[i], bj[(j % 2) * 2], bj[(j % 2) * 2 + 1]);
    }
}

// The main loop over `tiles` K tiles of a STAGES-deep cp.async pipeline with KK 16-deep
// steps per tile (KK even), two fragment sets in flight:
//   load_stage(s, t)           copies K tile t into stage s (and nothing else: the commit is here)
//   load_frags(a, b, s, kk)    reads step kk's fragments of stage s into one set (a, b)
//   mma(a, b)                  the tensor-core work of one step on one set
// It fills every stage (one commit group each, empty past the end), waits for tile 0, then
// for each step fetches the next step's fragments while the tensor cores work on this one.
// The barrier sits before the last step of a tile: every warp holds its fragments of tile t
// by then (read at kk - 1), so its stage may be refilled with tile t + STAGES, and tile
// t + 1 must have landed before its first fragments are read. The caller waits for the last
// (empty) groups after it.
template <int STAGES, int KK, class AFrag, class BFrag, class LoadStage, class LoadFrags, class Mma>
__device__ __forceinline__ void mma_pipeline(int tiles, AFrag (&a)[2], BFrag (&b)[2], LoadStage&& load_stage,
                                             LoadFrags&& load_frags, Mma&& mma) {
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    if (s < tiles) load_stage(s, s);
    ptx::cp_async_commit();
  }
  ptx::cp_async_wait<STAGES - 1>();  // tile 0 is in
  __syncthreads();

  load_frags(a[0], b[0], 0, 0);
  for (int t = 0; t < tiles; ++t) {
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) {
      if (kk == KK - 1) {
        ptx::cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (t + STAGES < tiles) load_stage(t % STAGES, t + STAGES);
        ptx::cp_async_commit();
        if (t + 1 < tiles) load_frags(a[(kk + 1) % 2], b[(kk + 1) % 2], (t + 1) % STAGES, 0);
      } else {
        load_frags(a[(kk + 1) % 2], b[(kk + 1) % 2], t % STAGES, kk + 1);
      }
      mma(a[kk % 2], b[kk % 2]);
    }
  }
}

// Launches kKernel with `smem` bytes of dynamic shared memory, raising the kernel's limit
// (needed above 48 KB) the first time (runtime/launch_helpers.cuh), and checks the launch.
template <auto kKernel, class... Args>
void launch_with_smem(dim3 grid, int threads, int smem, cudaStream_t stream, Args... args) {
  [[maybe_unused]] static const bool raised = allow_dynamic_smem(kKernel, smem);
  kKernel<<<grid, threads, smem, stream>>>(args...);
  WB_CHECK_LAUNCH();
}

}  // namespace wb::gemm
