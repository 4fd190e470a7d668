// The Hopper bonus's convolution kernel, built for sm_90a alone (hopper/implicit_gemm_wgmma_kernel.cu,
// in its own library: workbook_add_hopper_library in cmake/Workbook.cmake). The ladder's v8
// launcher (v8_implicit_gemm_wgmma.cu) checks the GPU and decides per call whether this path
// applies; v6 runs the shapes it does not take. Host declarations only: every launcher includes
// it (for the tile enums), and calls its functions only where WB_CH10_HOPPER says they are built.
#pragma once
#include <cuda_runtime.h>

#include "ch10.cuh"

namespace ch10::solution::hopper {

// Whether the wgmma path can take the problem: C % 8 == 0 (a 16-byte copy of x is 8 channels
// of one tap, and the filters' TMA map needs row strides that are multiples of 16 bytes), x
// and w 16-byte aligned. Any N, H, W, K, filter, stride and padding beyond that.
bool supports(const ConvShape& s, const bf16* x, const bf16* w);

// The kernel's block tiles (pixels x filters). kAuto: the launcher picks one per shape (the
// fewest MACs on the busiest SM, as v6); the others force one, so that the tests check every
// tile on every shape whatever the GPU's SM count would pick.
enum class Tile { kAuto, k128x128, k64x128, k128x64, k64x64 };

// conv2d_bn_relu/bf16 (ch10.cuh) on compute capability 9.0, when supports() is true. s must
// have passed require_valid.
void conv_bn_relu(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const ConvShape& s,
                  cudaStream_t stream, Tile tile = Tile::kAuto);

// v12's persistent kernel (implicit_gemm_wgmma_persistent_kernel.cu): one block an SM walking
// 128-pixel tiles of BN filters. kAuto: the launcher picks BN (64 or 128) per shape with its
// model; the others force one (the tests check both tiles whatever the model picks).
enum class PersistentTile { kAuto, k128x64, k128x128 };

// conv2d_bn_relu/bf16 on compute capability 9.0 by v12's kernel, when supports() is true; false
// (nothing launched) when the shape has more tiles than the kernel indexes (2^30), or, with
// kAuto, when the model's tile is (128, 64) and no block would get a second tile: the caller
// runs v8. s must have passed require_valid.
bool conv_bn_relu_persistent(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                             const ConvShape& s, cudaStream_t stream, PersistentTile tile = PersistentTile::kAuto);

// v13's kernel (implicit_gemm_im2col_tma_kernel.cu): v12's persistent blocks with the im2col
// rows of A brought by the copy engine (TMA in im2col mode), one thread issuing every copy.
// schedule kResident: (128, 64) tiles, each block keeping its one filter tile's every step in
// shared memory, where the grid is a multiple of the filter tiles and the steps fit (else the
// (128, 64) tiles as kAlone); kAlone: every step's filter box loaded with its A; kPingPong:
// kResident's tiles, each consumer warpgroup on whole tiles of its own, one multiplying while the
// other runs its epilogue (where resident filters apply; else as kAuto); kAuto: kPingPong where
// it applies, else kAlone. tile (kAlone): kAuto, the launcher's model picks BN per shape;
// the others force one. False (nothing launched) when the shape is outside what an im2col
// tensor map describes (a stride over 8, padding or corners past its 8-bit offsets, filters
// over 64 taps a side, a map the driver refuses) or has 2^30 tiles or more: the caller runs
// v12. s must have passed require_valid.
enum class Im2colSchedule { kAuto, kAlone, kResident, kPingPong };
bool conv_bn_relu_im2col(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const ConvShape& s,
                         cudaStream_t stream, PersistentTile tile = PersistentTile::kAuto,
                         Im2colSchedule schedule = Im2colSchedule::kAuto);

// v14's kernel (implicit_gemm_mma_tma_kernel.cu): v13's producer (A by TMA in im2col mode, the
// filters by TMA, resident where v13 keeps them) feeding consumer warps that multiply with
// ldmatrix + mma.sync. kAuto: resident (128, 64) tiles where v13 takes them, else the tile of
// (128, 64), (128, 128) and (96, 128) that the launcher's model picks; the others force one.
// consumer_warps: 8 (warp tiles 32 x 32, 64 x 32, 48 x 32), or 4 (64 x 32, 64 x 64; no 96-pixel
// tile), the first form of v14. False (nothing launched) where conv_bn_relu_im2col would return
// false: the caller runs another path. s must have passed require_valid.
enum class MmaTile { kAuto, k128x64, k128x128, k96x128, k128x64Resident };
bool conv_bn_relu_mma_im2col(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                             const ConvShape& s, cudaStream_t stream, MmaTile tile = MmaTile::kAuto,
                             int consumer_warps = 8);

// depthwise3x3/bf16, v10's tiles by TMA (depthwise_tiles_tma_kernel.cu) on compute capability
// 9.0. The caller has checked C % 8 == 0 and 16-byte aligned x, w, y; false (nothing launched)
// when the problem does not fit the kernel (2^31 tiles or more, a tensor map the driver
// refuses): the caller runs another path.
bool depthwise_tiles_tma(const bf16* x, const bf16* w, bf16* y, int N, int H, int W, int C, cudaStream_t stream);

}  // namespace ch10::solution::hopper
