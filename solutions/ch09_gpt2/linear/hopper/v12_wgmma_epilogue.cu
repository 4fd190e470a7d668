// Step 12 (Hopper sm_90a only) — the prefill GEMM on TMA + mbarriers + wgmma, the tile chosen
// per shape, v8's epilogue on the registers.
//
// What changes over v8 (ldmatrix + mma.sync, 4 cp.async stages, 8 warps that both load and
// compute): the main loop is chapter 5's Hopper GEMM (v6_wgmma_tma), taken from the shared
// pieces in harness/device/wgmma_gemm.cuh (kmajor_gemm_kernel), not copied.
//   * TMA: one thread of a producer warpgroup asks the copy engine for a (64, BM) box of x and
//     a (64, BN) box of W per stage, written in the 128-byte swizzle the tensor cores read;
//     zeros past M, N and K. No thread computes an address or waits on a copy it issued.
//   * full / empty mbarriers per stage; the producer runs up to kStages steps of 64 along K
//     ahead of the math, the consumers release a stage as soon as its wgmmas are done.
//   * wgmma.mma_async m64nWNk16: a warpgroup multiplies 64 x WN x 16 per instruction straight
//     from shared memory, one step in flight behind the next (wait_group 1). mma.sync reaches
//     about two thirds of Hopper's BF16 tensor rate; wgmma is the instruction that reaches the
//     rest, and the register file no longer holds operand fragments.
//   * W [N, K] is already what wgmma wants: B (k, n) = W[n][k], so B's 16 x WN slice is WN rows
//     of W with k contiguous, "K-major", like x. Both descriptors are K-major (imm-trans-a =
//     imm-trans-b = 0; chapter 5's B is K x N row-major and needs imm-trans-b = 1).
// Why faster: at M = 512 v8 spends its time issuing ldmatrix and cp.async beside the math and
// waiting on a 4-deep pipeline of 32-deep steps; here the math warps issue only wgmmas, each
// stage is twice as deep, and up to 8 stages are in flight.
//
// The tile per shape. A 512-token prompt has 4 row blocks of 128 (or 8 of 64), so the number
// of CTAs comes from N, and with K = 768 each CTA runs only 12 steps of 64: one wave that
// fills the SMs beats bigger tiles. Each tile has two consumer warpgroups: BM = 128 splits
// the rows (64 x BN each), BM = 64 splits the columns (64 x BN / 2 each, sharing x's box).
// The launcher (linear::with_best_tile, wgmma_linear.cuh) scores each tile as waves x (K steps
// x step time + ~1500 cycles of fill and epilogue), a step's time being the larger of its math
// (BM BN / 32 cycles at 2048 BF16 FMA per cycle per SM) and its bytes ((BM + BN) 128 at ~64
// bytes per cycle from L2), and takes the cheapest. On an H100 / H200 (132 SMs), M = 512:
//   N = 2304 (124M QKV)       (128, 72): 4 x 32 = 128 CTAs  ((128, 128) gives 72, (128, 96) 96;
//                             (64, 144) gives 128 too, with 4 % more bytes per step: not listed)
//   N = 3072 (124M fc)        (128, 96): 4 x 32 = 128 CTAs
//   N = 768  (124M proj)      (64, 48):  8 x 16 = 128 CTAs, K = 768 or 3072
//   N = 4800 (1.5B QKV)       (128, 160): 4 x 30 = 120 CTAs
//   N = 6400 (1.5B fc)        (128, 208): 4 x 31 = 124 CTAs
//   N = 1600 (1.5B proj)      (64, 112): 8 x 15 = 120 CTAs
//   large M (many waves)      (128, 256), chapter 5's tile
// No split-K: the N = 768 projections would like it (K = 3072, 128 CTAs of a 64 x 48 tile
// each stream 48 steps), but a deterministic one needs a second pass over FP32 partials.
// The grid is persistent (at most one CTA per SM, each walking tiles), as chapter 5's, so
// any M works; at M = 512 each CTA has one tile. Stages: as many as fit in ~200 KB, up to 8.
//
// The epilogue, as v8's (epilogue.cuh): on the FP32 accumulators in registers, + bias in
// FP32, GELU (tanh form) in FP32, one rounding to BF16, then a 4-byte store of each column
// pair; the bias of a pair is loaded once for its two rows. Bias and BiasGelu are one kernel:
// the epilogue functor holds the op's Epilogue, as v8's kernel does.
//
// Edges: any M and N (TMA's zeros, guarded stores; element stores where N is odd). K % 8 != 0
// or unaligned x, W: the ladder's launcher calls v8 instead (linear/v12_wgmma_epilogue.cu).
//
// Run: build/ch09/bin/ch09_bench --op=linear_bias/bf16 --impl=v12_wgmma_epilogue,v8_mma_epilogue,cublaslt
#include <cuda.h>

#include <cstdint>

#include "wgmma_linear.cuh"

namespace ch09::solution::hopper {

bool wgmma_supports(int, int, int K, const bf16* x, const bf16* w) {
  return K % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
}

void linear_wgmma(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                  cudaStream_t stream) {
  const int sms = wb::sm_count();
  const bool pairs = N % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
  const BiasStore store{b, y, M, N, epi, pairs};
  linear::with_best_tile(M, N, K, sms, [&](auto tile) {
    linear::launch<decltype(tile)>(x, w, M, N, K, store, sms, stream, "v12_wgmma_epilogue");
  });
}

}  // namespace ch09::solution::hopper
