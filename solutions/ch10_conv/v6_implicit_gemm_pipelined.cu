// v6 — v4's implicit GEMM with the block tile picked per shape, a 3-4 stage pipeline of 64-deep
// steps, and the epilogue staged in shared memory so that y leaves in 16-byte stores.
//
// What changed from v4 (same instructions: cp.async, ldmatrix.x4, mma.sync m16n8k16):
//   * the tile is a template (Tile below) and the launcher picks one of four per shape:
//       (128, 128)  8 warps of (64, 32), 3 stages   96 KB   large M and K
//       (128,  64)  4 warps of (64, 32), 3 stages   72 KB   K <= 64, mid-size layers
//       ( 64, 128)  4 warps of (64, 32), 3 stages   72 KB
//       ( 64,  64)  4 warps of (32, 32), 4 stages   64 KB   small M (14 x 14 and 7 x 7 maps)
//     v4's fixed (128, 128) tile wastes half of every MMA when K = 64 (the 56 x 56 layer), and
//     gives 49-98 blocks to a 132-SM GPU on the 14 x 14 and 7 x 7 layers (M = 6,272 or 1,568
//     pixels at batch 32): most SMs idle. The launcher counts the blocks each tile gives, and
//     takes the tile whose busiest SM has the fewest MACs to do: ceil(blocks / SMs) x BM x BN
//     (a tie goes to the tile listed first, the larger: fewer bytes per MAC). Batch 32, 132 SMs:
//       56 x 56, 64 -> 64      M 100,352  (128, 64)   784 blocks, 6 per SM, no wasted columns
//       28 x 28, 128 -> 128    M  25,088  (128, 64)   392 blocks, 2.97 per SM (v4: 196, 1.48)
//       14 x 14, 256 -> 256    M   6,272  ( 64, 64)   392 blocks, 2.97 per SM (v4: 98)
//       7 x 7, 512 -> 512      M   1,568  (128, 64)   104 blocks (v4: 52)
//       1 x 1, 512 -> 128      M  25,088  (128, 64)   392 blocks
//       3 x 3 stride 2, 256    M   6,272  ( 64, 64)   392 blocks
//     No split-K: the op's launcher has no workspace for FP32 partial sums, and the first
//     call runs under stream capture, where an allocation is refused.
//   * 64 channels per K step (v4: 32), 3 or 4 stages in dynamic shared memory: half the
//     barriers per MAC, and 2-3 steps of copies in flight instead of one. A tile row is 128
//     bytes (8 pieces of 16 bytes); piece p of row r is stored at p ^ (r % 8), so the 8 rows
//     one ldmatrix phase reads hit 8 different groups of 4 banks (conflict-free, no padding).
//   * the K loop walks channel chunks outside and taps inside: step = (chunk of 64 channels,
//     r, s), s fastest. The copies of tap (r, s + 1) read nearly the same pixels of x as those
//     of tap (r, s), one pixel over, one step later; A's copies go through L1 (cp.async.ca),
//     so most of those bytes come from L1 instead of L2 (v4's Kg order put the C / 32 steps of
//     a whole tap between two neighbouring taps). B (the weights) is read once per block:
//     cp.async.cg, L2 only. The sum runs in a different order than v4's; the same FP32 terms.
//   * no division in the K loop: the tap (r, s) and the chunk c0 step forward by additions;
//     each thread's pixel rows are split into (n, h0, w0) once, before the loop (as v4), and
//     a row past M gets h0 = -2^30, which fails the bounds test of every tap.
//   * the epilogue goes through shared memory: the warps park their FP32 accumulators in the
//     idle pipeline buffers, then each thread takes 8 neighbouring channels of one pixel:
//     one 16-byte load of the residual, 8 epilogues in FP32, one 16-byte store of y (v4: one
//     4-byte store per pair). Whole 32-byte sectors, a quarter of the store instructions.
// C % 8 != 0 (no 16-byte copy lines up): v4 runs the shape, through its element-by-element
// path. K % 8 != 0 or y / residual not 16-byte aligned: the same kernel, the epilogue stores
// element by element.
// Offsets into x, w, y and the residual are 64-bit: N H W C passes 2^31 in the large cases.
// Expected: the MMAs busy on every layer (the SM count is the divisor, not the tile), fewer
// L2 bytes for A on the 3 x 3 layers; the measured change comes from the benchmark run
// (docs/ch10-conv.md).
//
// Run: ctest --preset ch10-solution -R conv2d_bn_relu/bf16/v6
//      build/ch10/bin/ch10_bench --benchmark_filter=conv2d_bn_relu
#include "runtime/errors.cuh"
#include "implicit_gemm_pipeline.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

// The tiles, the K loop and the staged epilogue are in implicit_gemm_pipeline.cuh (v11 runs
// them too); what they do is explained above.
using namespace pipelined;

// grid (ceil(M / BM), ceil(K / BN)), block (kThreads), kSmem bytes of dynamic shared memory.
// C % 8 == 0, x and w 16-byte aligned. vec_out: K % 8 == 0, y and residual 16-byte aligned.
template <class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    conv_pipelined_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                          const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, bool vec_out) {
  extern __shared__ __align__(128) unsigned char smem[];  // kStages x A tiles, then kStages x B tiles
  __shared__ Folded sF[T::BN];
  const uint32_t sA = smem_u32(smem), sB = sA + T::kStages * T::kAStage;

  const int m0 = blockIdx.x * T::BM, k0 = blockIdx.y * T::BN;
  const int tid = threadIdx.x;
  if (tid < T::BN && k0 + tid < d.s.K) sF[tid] = fold_bn(bn, k0 + tid);  // read after the loop's barriers

  float acc[T::MI][T::NI][4];
  k_loop<T>(x, w, d, m0, k0, 0, d.steps, sA, sB, acc);

  // --- epilogue: the accumulators into a BM x (BN + 8) FP32 tile over the idle stages, then
  // each thread 8 channels of one pixel at a time, 16-byte loads of the residual and stores of y.
  float* out = reinterpret_cast<float*>(smem);
  park_accumulators<T>(acc, out);
  __syncthreads();
  store_rows<T>(0, T::BM, m0, k0, d, sF, residual, y, vec_out,
                [&](int r, int c8, float(&v)[8]) { read_staged<T>(out, r, c8, v); });
}

template <class T>
void launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d, bool vec_out,
            cudaStream_t stream) {
  auto* kernel = &conv_pipelined_kernel<T>;
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kernel, T::kSmem);  // once per tile
  kernel<<<tile_grid<T>(d, 1), T::kThreads, T::kSmem, stream>>>(x, w, bn, residual, y, d, vec_out);
  WB_CHECK_LAUNCH();
}

}  // namespace

void v6_implicit_gemm_pipelined(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
                                cudaStream_t stream) {
  require_valid(s);
  // The largest tile's 96 KB (plus the static BN table) fit every GPU since sm_80, sm_86 and
  // sm_89's 99 KB only just; below that, or without 16-byte pieces of x and w, v4 runs it.
  if (!takes(s, x, w)) {
    v4_implicit_gemm_mma(x, w, bn, residual, y, s, stream);
    return;
  }
  const Dims d = make_dims(s);
  const bool vec_out = vector_out(s, residual, y);

  // The tile whose busiest SM does the least; on a tie the one listed first (larger tiles
  // first: fewer bytes from L2 per MAC).
  switch (pick_tile<Tile128x128, Tile128x64, Tile64x128, Tile64x64>(d.M, s.K, gpu().sms)) {
    case 0:
      launch<Tile128x128>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 1:
      launch<Tile128x64>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 2:
      launch<Tile64x128>(x, w, bn, residual, y, d, vec_out, stream);
      break;
    default:
      launch<Tile64x64>(x, w, bn, residual, y, d, vec_out, stream);
      break;
  }
}

}  // namespace ch10::solution
