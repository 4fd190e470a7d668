// Chapter 10's solution ladder: one file per step, each a launcher of ch10.cuh's types.
//
//   v1_direct              conv2d/f32: one thread per output, the 7-deep loop as written:
//                          right for every shape, the index arithmetic in 64 bits
//   v2_smem_direct         conv2d/f32: a block per (16 x 16 pixels, 8 filters) tile; the
//                          input tile (with its halo) and the filters of 4 channels at a time
//                          in shared memory, 8 outputs per thread
//   v3_implicit_gemm_wmma  conv2d_bn_relu/bf16: the convolution as a GEMM (M = N P Q pixels,
//                          Kg = R S C, K filters) on WMMA, im2col in the tile loader (16-byte
//                          loads when C % 8 == 0, scalar otherwise), the accumulator tile
//                          staged in shared memory where bias + BN + ReLU + residual apply
//   v4_implicit_gemm_mma   v3 on ldmatrix + mma.sync m16n8k16, (128, 128) tiles, cp.async
//                          double buffering with zero-fill at the padding, the epilogue on
//                          the registers; plain loads into the stages when C % 8 != 0
//   v5_depthwise           depthwise3x3/bf16: 8 channels per thread, 16-byte loads and
//                          stores, FP32 sums; a scalar path for C % 8 != 0
//   v6_implicit_gemm_pipelined
//                          conv2d_bn_relu/bf16: v4 with the block tile picked per shape
//                          ((128 or 64) x (128 or 64): the fewest MACs on the busiest SM),
//                          64-deep steps in 3-4 cp.async stages (swizzled, dynamic shared
//                          memory), taps inside channel chunks (A's copies through L1), the
//                          epilogue staged in shared memory for 16-byte stores; v4 runs
//                          C % 8 != 0
//   v7_depthwise_strip     depthwise3x3/bf16: 8 channels x a strip of 8 outputs down H per
//                          thread, the 9 taps in FP32 registers, each input row loaded and
//                          widened once, streaming stores; v5 for C % 8 != 0
//   v8_implicit_gemm_wgmma (bonus, Hopper sm_90a) conv2d_bn_relu/bf16: v6 on wgmma from
//                          shared memory, warp-specialised: a producer warpgroup gathers the
//                          im2col rows by cp.async into the 128-byte swizzle and fetches the
//                          filters by TMA, 4-5 stages under full / empty mbarriers; one or two
//                          consumer warpgroups of 64 pixels each (a proxy fence before their
//                          wgmmas); v6's tile choice and staged epilogue; v6 for C % 8 != 0
//                          (kernel: hopper/implicit_gemm_wgmma_kernel.cu)
//   v9_depthwise_ring      depthwise3x3/bf16: a block walks down a (column tile, channel slab),
//                          its input rows in a shared-memory ring that cp.async fills 8 rows
//                          ahead (zero-fill at the padding); 2 channels x 8 outputs per thread,
//                          the 3-row window and the taps in FP32 registers; v7 for C % 8 != 0
//   v10_depthwise_tiles    depthwise3x3/bf16: persistent blocks over (16 x 16 or 16 x 8 outputs,
//                          channel slab of whole 128-byte lines or whole pixels) tiles, the next
//                          tile's halo copied by cp.async into a second shared-memory buffer
//                          while this one is computed (one barrier per tile); 4 channels x a
//                          2 x 8 patch per thread, BF16 widened by bit placement, streaming
//                          vector stores; v9 for C % 8 != 0 (depthwise_tiles.cuh: the shared parts)
//                          (v10_depthwise_tiles_tma, sm_90a builds: the tiles by TMA boxes,
//                          kernel: hopper/depthwise_tiles_tma_kernel.cu)
//   v11_implicit_gemm_cluster_splitk
//                          conv2d_bn_relu/bf16 (sm_90): v6's tiles with two schedules v6 lacks:
//                          the K loop split over the 2 blocks of a thread-block cluster where
//                          a model of the busiest SM (fitted to v6's times) says it pays, the
//                          partial tiles added through distributed shared memory (no
//                          workspace); and, where the (128, 64) tiles are no more than the
//                          SMs, one block a tile at 2 blocks an SM (room for 201 registers).
//                          v6 elsewhere, below sm_90 and for v6's fallbacks
//                          (implicit_gemm_pipeline.cuh: v6's pieces both run)
//   v12_implicit_gemm_wgmma_persistent
//                          (bonus, Hopper sm_90a) conv2d_bn_relu/bf16: v8's kernel persistent,
//                          one block an SM of two producer and two consumer warpgroups walking
//                          (128, 64) or (128, 128) tiles (a model of the busiest block picks),
//                          the stage ring running on from tile to tile so that the next tile's
//                          loads fly under this one's epilogue (in registers, a BF16 tile);
//                          v8 for the rest (kernel: hopper/implicit_gemm_wgmma_persistent_kernel.cu,
//                          v8's pieces in hopper/implicit_gemm_wgmma.cuh)
//   v13_implicit_gemm_im2col_tma
//                          (bonus, Hopper sm_90a) conv2d_bn_relu/bf16: v12's persistent kernel
//                          with A's im2col rows brought by TMA in im2col mode (one copy a step,
//                          the padding zero-filled by the copy engine), one thread issuing every
//                          copy, no proxy fence; the filters resident in shared memory where a
//                          block keeps one filter tile and its steps fit, there each consumer
//                          warpgroup on whole tiles (ping-pong: one multiplies while the other
//                          runs its epilogue); v12 for the rest
//                          (kernel: hopper/implicit_gemm_im2col_tma_kernel.cu)
//   v14_implicit_gemm_mma_tma
//                          (Hopper sm_90a) conv2d_bn_relu/bf16: v13's producer (A by TMA in
//                          im2col mode, the filters by TMA, resident where v13 keeps them, full /
//                          empty mbarriers, persistent blocks) feeding consumer warps that
//                          multiply with ldmatrix + mma.sync (v6's instructions, 8 warps of
//                          32 x 32, 64 x 32 or 48 x 32 on (128, 64), (128, 128) or (96, 128)
//                          tiles), the epilogue on their registers staged per warp;
//                          v11 for the rest (kernel: hopper/implicit_gemm_mma_tma_kernel.cu)
#pragma once
#include <span>

#include "ch10.cuh"

namespace ch10::solution {

Conv2dF32Fn v1_direct;                    // v1_direct.cu
Conv2dF32Fn v2_smem_direct;               // v2_smem_direct.cu
ConvBnReluFn v3_implicit_gemm_wmma;       // v3_implicit_gemm_wmma.cu
ConvBnReluFn v4_implicit_gemm_mma;        // v4_implicit_gemm_mma.cu
Depthwise3x3Fn v5_depthwise;              // v5_depthwise.cu
ConvBnReluFn v6_implicit_gemm_pipelined;  // v6_implicit_gemm_pipelined.cu
Depthwise3x3Fn v7_depthwise_strip;        // v7_depthwise_strip.cu
Depthwise3x3Fn v9_depthwise_ring;         // v9_depthwise_ring.cu
Depthwise3x3Fn v10_depthwise_tiles;       // v10_depthwise_tiles.cu
// v10 with 8 channels a thread (16-byte vectors; v10 takes 4), and v10 with slabs of at most
// 64 channels (v10 takes 96 or 144 where they divide C), so that the tests check them and the
// benchmark compares them (v10_depthwise_tiles.cu).
Depthwise3x3Fn v10_depthwise_tiles_c8;
Depthwise3x3Fn v10_depthwise_tiles_pow2;
// v10 with three buffers (two tiles in flight a block), and v10 with 8 x 8 tiles on the
// 144-channel slab (they divide 56 x 56): comparison forms (v10_depthwise_tiles.cu).
Depthwise3x3Fn v10_depthwise_tiles_3buf;
Depthwise3x3Fn v10_depthwise_tiles_fit;
// v10 with the tiles brought by TMA (hopper/depthwise_tiles_tma_kernel.cu), listed on sm_90a builds.
Depthwise3x3Fn v10_depthwise_tiles_tma;
ConvBnReluFn v8_implicit_gemm_wgmma;  // v8_implicit_gemm_wgmma.cu (+ hopper/), listed on sm_90a builds
// v8 with one block tile forced (pixels x filters: "128x128", "64x128", "128x64", "64x64"),
// so that the tests check each tile on every shape (v8_implicit_gemm_wgmma.cu).
struct ForcedTile {
  const char* tile;
  ConvBnReluFn* fn;
};
std::span<const ForcedTile> v8_forced_tiles();
ConvBnReluFn v12_implicit_gemm_wgmma_persistent;  // v12_implicit_gemm_wgmma_persistent.cu (+ hopper/), sm_90a builds
// v12 with its tile forced ("128x64", "128x128"), tested on every tile whatever the model picks.
std::span<const ForcedTile> v12_forced_tiles();
ConvBnReluFn v13_implicit_gemm_im2col_tma;  // v13_implicit_gemm_im2col_tma.cu (+ hopper/), sm_90a builds
// v13 with its tile forced ("128x64", "128x128", "128x64_resident", "pingpong"), tested on each
// whatever the launcher picks.
std::span<const ForcedTile> v13_forced_tiles();
ConvBnReluFn v14_implicit_gemm_mma_tma;  // v14_implicit_gemm_mma_tma.cu (+ hopper/), sm_90a builds
// v14 with its tile forced ("128x64", "128x128", "96x128", "128x64_resident"), or on 4 consumer
// warps ("4warps"), tested on each whatever the launcher picks.
std::span<const ForcedTile> v14_forced_tiles();
ConvBnReluFn v11_implicit_gemm_cluster_splitk;  // v11_implicit_gemm_cluster_splitk.cu
// v11's persistent kernel on every shape (resident blocks walk (128, 64) tiles, the next
// tile's copies in flight during the epilogue): a comparison form (same file).
ConvBnReluFn v11_implicit_gemm_cluster_splitk_persistent;
// v11's split of 2 on every shape whose two slices hold at least 4 K steps each (the split
// kernels' coverage in the tests; v6 elsewhere). Marked slow: not benchmarked by default.
ConvBnReluFn v11_implicit_gemm_cluster_splitk_split2;

}  // namespace ch10::solution
