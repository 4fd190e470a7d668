// v13's halo form (bonus, Hopper sm_90a only) — for the layers whose every tap of x is one
// 64-channel chunk and whose filters are one tile (stride 1, C <= 64, K <= 64: ResNet-50's 3 x 3
// 64 -> 64 layer at 56 x 56): a tile's input rows, with their halo, are brought into shared
// memory ONCE, and each of the R S taps reads them as a shifted view, where v13 brings the tile's
// 128 im2col rows again for every tap.
//
// Why (docs/ch10-conv.md, v13 on an H200, batch 32, 3 x 3 64 -> 64 at 56 x 56): v13 runs that layer
// at 28.2-28.4 us, level with cuDNN's fused graph. Its 784 tiles of (128, 64) each take 9 im2col
// copies of 16 KB, 115.6 MB from L2 for a 12.8 MB x (once a tap), about 4.5 TB/s over the run:
// what L2 gives, while the tensor cores need 7-8 us for the layer's MACs. Nine taps of 128
// consecutive pixels (at most 4 output rows of 56) read at most 4 + 2 input rows of 58 columns: 44
// KB instead of 144, so about 2.9x fewer L2 bytes for A.
//
// The shifted view. A tile is 128 consecutive output pixels m0 .. m0 + 127 (q fastest, then p,
// then the image). Its input rows, with the padding as zero columns, are copied into a buffer of
// shared memory, one TMA box (64 channels x (Q + S - 1) columns x 1 row, zeros outside the image and
// past C) per input row, each buffer row `pitch` pixel slots long (Q + S - 1 rounded up to 8, so
// that every row starts on a 1024-byte swizzle period):
//
//   buffer row j, slot i  =  input row pa - pad + j, column i - pad, of image n0
//                            (rows past image n0's last: the next image's rows from -pad)
//   output pixel (p, q), tap (r, s)  ->  slot (p - pa + r) pitch + q + s     (+ the next image's offset)
//
// A tap is not a whole-row shift of the buffer (a pixel's slot jumps by pitch - Q at each output
// row's end), and wgmma's shared-memory descriptor can only describe whole 8-row groups. So the
// consumers load A into registers themselves, each lane naming its own row (ldmatrix.x4: lanes
// 0-15 the rows of a warp's 16 pixels, lanes 16-31 the same rows 16 bytes on), and multiply with
// wgmma's register-A form; B, the filters, stays resident in shared memory (v13's, loaded once a
// block) and is read through descriptors as in v13.
//
//   producer warpgroup (thread 0)             consumer warpgroups 1, 2 (64 pixel rows each)
//   the R S filter boxes, once                 wait for the filters
//   for each tile:                             for each tile:
//     wait empty[b]                              wait full[b]
//     expect_tx (rows x (Q + S - 1) x 128 B)      for each tap (r, s): ldmatrix.x4 x 4 (A of the
//     one box a row -> buffer b                   warp's 16 rows, the slots shifted by r pitch + s);
//                                                 4 wgmma m64n64k16, A from registers (two sets,
//                                                 by the tap's parity), B from the resident box
//                                                 release buffer b after the last tap's ldmatrix
//                                               epilogue: v13's (persistent_epilogue)
//
// Two buffers: the next tile's rows land while this one is multiplied. Per buffer, the most rows
// a tile needs: the output rows 128 pixels span (ceil(127 / Q) + 1) plus R - 1 halo rows, twice
// over where a tile can run from one image into the next (P Q not a multiple of 128); at 56 x 56:
// 8 rows of 64 slots, 64 KB. Shared memory at 56 x 56: 2 x 64 KB buffers, 72 KB of filters, the
// 18 KB output tile: 219 KB, one block an SM.
//
// Where it applies (the launcher's halo_plan): stride 1, C <= 64 (one chunk; C % 8 == 0 as v13's),
// K <= 64, P Q >= 128 (a tile touches at most two images), Q + S - 1 <= 256 (a box's width), and
// everything fitting in shared memory (3 x 3 filters at 56 x 56: yes; 5 x 5: no). Elsewhere v13
// as before. Rows past M read some valid slot and are never stored.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v13_*'
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16 --impl=v13_implicit_gemm_im2col_tma,
//      v13_implicit_gemm_im2col_tma_128x64_resident,cudnn_fused
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "device/mma.cuh"
#include "device/sm90.cuh"
#include "device/vec.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"
#include "conv_common.cuh"
#include "hopper.cuh"
#include "implicit_gemm_wgmma.cuh"

namespace ch10::solution::hopper {
namespace {

using namespace wb::sm90;  // mbarriers, TMA, wgmma fences
using wb::ptx::ldmatrix_x4;
using wb::ptx::smem_u32;

// The block: v13's (a producer warpgroup whose thread 0 issues every copy, two consumer
// warpgroups of 64 pixel rows), 128-pixel tiles of all (at most 64) filters. The members that
// load_resident_filters and persistent_epilogue read (BN, kBStage, kLdB) mean what they mean in
// v13's ICfg.
struct HCfg {
  static constexpr int BM = 128, BN = 64, kBufs = 2;
  static constexpr int kThreads = kProducers + 256;
  static constexpr int kBStage = BN * kRowBytes;  // one tap's filters: 8 KB
  static constexpr int kLdB = BN + 8;             // the BF16 output tile: values a row (16 bytes of padding)
  static constexpr int kOut = BM * kLdB * 2;
  // The dynamic shared memory a launch may take (the static arrays beside it: 3 KB).
  static constexpr int kSmemMax = 227 * 1024 - 4096;
};

constexpr int kGroup = 3;  // taps whose fragments a consumer holds at once (a 3 x 3 filter's row)

// d (64 x 64 per warpgroup, 32 FP32 per thread) += A (64 x 16, from registers: a[0..3], the
// mma.sync A fragment of the warp's 16 rows) * B (16 x 64, K-major in shared memory through
// desc_b: imm-trans-b = 0).
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16\n"
      "{" CH10_ACC_0_31
      "},\n"
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"
      "}\n"
      : WB_WGMMA_D32(d, 0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// The input rows of the tile whose first pixel is m0 (its last: m0 + 127, or M - 1): image n0's
// output rows from pa need its input rows pa - pad .. (buffer rows 0 .. rows_a - 1); where the
// tile runs into image n1 = n0 + 1, that image's input rows from -pad follow (rows_b of them).
struct HaloTile {
  int n0, pa, rows_a, n1, rows_b;
  __device__ __forceinline__ HaloTile(const Dims& d, int m0) {
    const int pq = d.P * d.Q, m1 = min(m0 + HCfg::BM, d.M) - 1;
    n0 = m0 / pq, pa = m0 % pq / d.Q;
    n1 = m1 / pq;
    const int pb = m1 % pq / d.Q;
    rows_a = (n1 == n0 ? pb : d.P - 1) - pa + d.s.R;
    rows_b = n1 == n0 ? 0 : pb + d.s.R;
  }
  // How many of the `count` input rows from `first` lie inside an image of H rows.
  static __device__ __forceinline__ int inside(int first, int count, int H) {
    return max(0, min(first + count, H) - max(first, 0));
  }
};

// grid (min(tiles, SMs)), block (HCfg::kThreads), 2 buf_bytes + steps x kBStage + kOut + 1024
// bytes of dynamic shared memory. Tile i: pixels 128 i ..; map_x: x as (C, W, H, N), (64, Q + S -
// 1, 1, 1) boxes, 128 B swizzle; map_w: w as (C, R S, K), (64, 1, 64) boxes. pitch: pixel slots
// a buffer row (a multiple of 8); buf_bytes: one buffer. vec_out as v13's.
__global__ void __launch_bounds__(HCfg::kThreads, 1)
    conv_halo_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w, BnParams bn,
                     const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, int pitch, int buf_bytes,
                     int tiles, bool vec_out) {
#if defined(CH10_SM90A)
  using T = HCfg;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[T::kBufs], empty_bar[T::kBufs], b_bar;
  __shared__ Folded sF[2][2][T::BN];                         // each consumer warpgroup's, two sets by the tile's parity
  __shared__ __align__(128) uint4 zero_row[kRowBytes / 16];  // what a tap in the padding rows reads
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t b_res = base + uint32_t(T::kBufs * buf_bytes);  // the resident filters: tap t at + t kBStage
  const ConvShape& s = d.s;
  const int pq = d.P * d.Q;

  const int tid = threadIdx.x, lane = tid % 32;
  if (tid < kRowBytes / 16) zero_row[tid] = make_uint4(0, 0, 0, 0);
  if (tid == 0) {
    for (int b = 0; b < T::kBufs; ++b) {
      mbar_init(smem_u32(&full_bar[b]), 1);   // thread 0's expect_tx (and the boxes' bytes)
      mbar_init(smem_u32(&empty_bar[b]), 8);  // lane 0 of each consumer warp
    }
    mbar_init(smem_u32(&b_bar), 1);
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();  // the only block-wide barrier

  if (tid < kProducers) {  // the producer: thread 0 issues every copy, the rest leave
    if (tid == 0) {
      load_resident_filters<T>(b_res, &map_w, &b_bar, d, 1);
      const uint32_t row_bytes = uint32_t((d.Q + s.S - 1) * kRowBytes);  // one box
      int buf = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const HaloTile h(d, tile * T::BM);
        const uint32_t full = smem_u32(&full_bar[buf]), dst = base + uint32_t(buf * buf_bytes);
        // Rows outside the image are not loaded: the consumers read zero_row for them.
        const int lo_a = h.pa - s.pad, lo_b = -s.pad;  // the segments' first input rows
        const int rows = h.inside(lo_a, h.rows_a, s.H) + h.inside(lo_b, h.rows_b, s.H);
        mbar_wait(smem_u32(&empty_bar[buf]), phase ^ 1);  // every consumer warp is done with it
        mbar_arrive_expect_tx(full, uint32_t(rows) * row_bytes);
        for (int j = 0; j < h.rows_a + h.rows_b; ++j) {  // input row, image (columns outside: zeros)
          const bool first = j < h.rows_a;
          const int row = first ? lo_a + j : lo_b + j - h.rows_a;
          if (row < 0 || row >= s.H) continue;
          tma_load_4d(dst + uint32_t(j * pitch * kRowBytes), &map_x, 0, -s.pad, row, first ? h.n0 : h.n1, full);
        }
        if (++buf == T::kBufs) buf = 0, phase ^= 1;
      }
    }
    return;
  }

  // --- consumers: warpgroup cw, rows 64 cw .. 64 cw + 63 of each tile --------------------------
  const int cw = (tid - kProducers) / 128, wt = tid % 128, warp = wt / 32;
  const int c8 = wt % (T::BN / 8), rr = wt / (T::BN / 8);  // the epilogue's stores
  // The lane's ldmatrix row: pixel row 64 cw + 16 warp + lane % 16 of the tile, chunk 2 kk + half.
  const int ld_row = cw * 64 + warp * 16 + lane % 16, half = lane / 16;
  const uint32_t zero = smem_u32(zero_row);  // any of its chunks: all zeros
  bf16* ob = reinterpret_cast<bf16*>(smem_raw + (base - smem_u32(smem_raw)) + T::kBufs * buf_bytes +
                                     d.steps * T::kBStage);  // the output tile, after the filters
  float acc[T::BN / 2];
  uint32_t a[kGroup][4][4];  // A fragments of kGroup taps: 4 slices of k16 each
  int buf = 0;
  uint32_t phase = 0;
  int tile_parity = 0;
  mbar_wait(smem_u32(&b_bar), 0);  // the block's filters are in
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, tile_parity ^= 1) {
    const int m0 = tile * T::BM;
    const HaloTile h(d, m0);
    const bool folds = wt < T::BN && wt < s.K;  // this thread folds channel wt
    BnChannel channel;
    if (folds) channel.load(bn, wt);
    // The lane's pixel (rows past M: the last pixel, never stored) and its tap (0, 0)'s slot.
    const int m = min(m0 + ld_row, d.M - 1), n = m / pq, p = m % pq / d.Q, q = m % d.Q;
    const int slot0 = (n == h.n0 ? p - h.pa : h.rows_a + p) * pitch + q;
    const int r_lo = s.pad - p, r_hi = s.H + s.pad - p;  // the taps r whose input row is inside the image
    const uint32_t a_buf = base + uint32_t(buf * buf_bytes);
#pragma unroll
    for (int i = 0; i < T::BN / 2; ++i) acc[i] = 0.0f;
    mbar_wait(smem_u32(&full_bar[buf]), phase);  // every row of the tile is in

    // kG taps from t0 at a time: their A fragments from the shifted slots into registers, then
    // their wgmmas as one group, waited for before the next taps' fragments are loaded (ptxas
    // serializes every wgmma of a kernel that writes a wgmma's A registers while another wgmma is
    // in flight; the other consumer warpgroup keeps the tensor cores busy meanwhile). No branch
    // among the wgmmas: ptxas serializes those too.
    auto taps = [&]<int kG>(std::integral_constant<int, kG>, int t0) {
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        const int t = t0 + g, r = t / s.S, slot = slot0 + r * pitch + (t - r * s.S);
        const uint32_t row = r >= r_lo && r < r_hi ? a_buf + uint32_t(slot) * kRowBytes : zero;
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) {
          ldmatrix_x4(a[g][kk], row + (uint32_t((2 * kk + half) ^ (slot & 7)) << 4));
        }
      }
      pin(acc);
      wgmma_fence();
#pragma unroll
      for (int g = 0; g < kG; ++g) {
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) {
          wgmma_m64n64k16_rs(acc, a[g][kk], make_desc(b_res + uint32_t((t0 + g) * T::kBStage + kk * 32), 16, 1024));
        }
      }
      wgmma_commit();
      wgmma_wait<0>();
      pin(acc);
    };
    int t0 = 0;
    for (; t0 + kGroup <= d.steps; t0 += kGroup) taps(std::integral_constant<int, kGroup>{}, t0);
    if (d.steps - t0 == 2) {
      taps(std::integral_constant<int, 2>{}, t0);
    } else if (d.steps - t0 == 1) {
      taps(std::integral_constant<int, 1>{}, t0);
    }
    __syncwarp();  // every lane's fragment loads are done: the buffer is free
    if (lane == 0) mbar_arrive(smem_u32(&empty_bar[buf]));
    if (++buf == T::kBufs) buf = 0, phase ^= 1;

    // --- epilogue: v13's, while the producer loads the tile after next into the freed buffer.
    persistent_epilogue<T>(acc, ob, sF[cw][tile_parity], folds, channel, bn, residual, y, d, m0, 0, vec_out, cw, wt,
                           warp, lane, c8, rr);
    __syncwarp();  // the warp whole again before the next tile's wgmmas (.aligned)
  }
#else
  __trap();  // built for sm_90a only; the launcher never runs it elsewhere
#endif
}

// --- host side -------------------------------------------------------------------------

// Where the halo form applies, and its buffers' geometry (the kernel's header).
struct HaloPlan {
  int pitch, buf_bytes, smem, tiles, grid;
};

bool halo_plan(const Dims& d, int sms, HaloPlan& h) {
  const ConvShape& s = d.s;
  const long long pq = (long long)d.P * d.Q;
  if (s.stride != 1 || s.C > kBK || s.K > HCfg::BN || pq < HCfg::BM) return false;
  const int box_w = d.Q + s.S - 1;
  if (box_w > 256) return false;
  h.pitch = wb::round_up(box_w, 8);
  const bool straddles = pq % HCfg::BM != 0 && s.N > 1;  // a tile may run into the next image
  const int rows = wb::ceil_div(HCfg::BM - 1, d.Q) + 1 + (s.R - 1) * (straddles ? 2 : 1);
  const long long buf = (long long)rows * h.pitch * kRowBytes;
  const long long smem = HCfg::kBufs * buf + (long long)d.steps * HCfg::kBStage + HCfg::kOut + 1024;
  if (smem > HCfg::kSmemMax) return false;
  h.buf_bytes = int(buf), h.smem = int(smem);
  h.tiles = wb::ceil_div(d.M, HCfg::BM);
  h.grid = std::min(h.tiles, sms);
  return true;
}

// x (N x H x W x C, BF16) as a 4-D tensor (C, W, H, N) for tiled boxes of (64 channels, box_w
// columns, 1 row, 1 image), the 128-byte swizzle, zeros outside; the map of the last call is kept.
const CUtensorMap& halo_map(const bf16* x, const ConvShape& s, int box_w) {
  static const bf16* last = nullptr;
  static ConvShape shape{};
  static int width = 0;
  static CUtensorMap map{};
  if (last != x || width != box_w || shape.N != s.N || shape.H != s.H || shape.W != s.W || shape.C != s.C) {
    const cuuint64_t dims[4] = {cuuint64_t(s.C), cuuint64_t(s.W), cuuint64_t(s.H), cuuint64_t(s.N)};
    const cuuint64_t strides[3] = {cuuint64_t(s.C) * sizeof(bf16), cuuint64_t(s.W) * s.C * sizeof(bf16),
                                   cuuint64_t(s.H) * s.W * s.C * sizeof(bf16)};
    const cuuint32_t box[4] = {cuuint32_t(kBK), cuuint32_t(box_w), 1, 1}, element_strides[4] = {1, 1, 1, 1};
    const CUresult r =
        wb::sm90::tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<bf16*>(x), dims, strides,
                                       box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) throw std::runtime_error("cuTensorMapEncodeTiled refused v13's halo map of x");
    last = x, shape = s, width = box_w;
  }
  return map;
}

}  // namespace

bool conv_bn_relu_halo(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const ConvShape& s,
                       cudaStream_t stream) {
  const Dims d = dims_of(s);
  HaloPlan h{};
  if (!halo_plan(d, wb::sm_count(), h)) return false;
  const bool vec_out = s.K % 8 == 0 && wb::aligned16(y) && (residual == nullptr || wb::aligned16(residual));
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(&conv_halo_kernel, HCfg::kSmemMax);
  const CUtensorMap& map_x = halo_map(x, s, d.Q + s.S - 1);
  const CUtensorMap& map_w = filter_map(w, s, HCfg::BN);
  conv_halo_kernel<<<h.grid, HCfg::kThreads, h.smem, stream>>>(map_x, map_w, bn, residual, y, d, h.pitch, h.buf_bytes,
                                                               h.tiles, vec_out);
  WB_CHECK_LAUNCH();
  return true;
}

}  // namespace ch10::solution::hopper
