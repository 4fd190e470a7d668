// v11 — v6's implicit GEMM with the K sum split over a thread-block cluster (sm_90): the
// blocks of a cluster share one output tile, each sums a slice of the K loop, and they add
// their partial tiles through distributed shared memory. No workspace, one launch.
//
// Why: on the layers with few output tiles v6 leaves the GPU waiting on latency, not on a
// roofline. The 7 x 7 layer (M = 1,568 pixels, K = 512 filters, a 4,608-deep sum at batch 32)
// gives v6 104 blocks of (128, 64) for 132 SMs: one block of 4 warps per SM, each walking 72
// steps of 64 channels, one warp per scheduler to hide every barrier, copy and MMA chain
// (70.6 us against cuDNN's 25.3). v6 cannot split the sum: its launcher has no workspace for
// FP32 partials, and the first call runs under stream capture, where an allocation is
// refused. A cluster needs none: its blocks run at the same time on one GPC, and each can
// read the others' shared memory.
//
// What changed from v6 (the same tiles, K loop and staged epilogue: implicit_gemm_pipeline.cuh):
//   * the grid is (ceil(M / BM) x split, ceil(K / BN)) blocks in clusters of (split, 1, 1):
//     the `split` blocks of a cluster share one (BM, BN) output tile. Block rank j of the
//     cluster runs the K loop over steps [steps j / split, steps (j + 1) / split) (a step is
//     one tap of one 64-channel chunk, as in v6), from its own cp.async stages.
//   * after its loop each block parks its FP32 partial tile in its own shared memory (over
//     the idle stages, as v6 parks its complete tile), then the cluster barrier
//     (barrier.cluster arrive.release / wait.acquire: the partials are visible cluster-wide).
//   * block j then reduces rows [BM j / split, BM (j + 1) / split) of the tile: for each of
//     its rows it reads the 8 channels it owns from every block's partial (mapa +
//     ld.shared::cluster, harness/device/cluster.cuh), adds them in rank order 0, 1, ...
//     (the same order whichever block reduces: the sums are deterministic), and applies v6's
//     fused bias + BN + residual + ReLU once, 16-byte stores of y.
//   * a second cluster barrier before exit: no block leaves (and frees its shared memory)
//     while a peer may still read its partial.
//   Cost: each block's (BM x BN x 4)-byte partial crosses the cluster once (32 KB at (128,
//   64)), against a K loop of 16 or more steps that each copy 24 KB into the block.
//
// The split per shape (1 to 4; 1 is v6's kernel as it is): v6's tile (not (128, 128): see
// run()), then the largest split whose blocks the GPU holds all at once, tiles x split <= the
// resident blocks (cudaOccupancyMaxActiveClusters x split: 3 blocks an SM for these tiles, in
// whole clusters a GPC), each slice at least kMinSliceSteps = 4 steps long (fewer and the
// pipeline's fill costs more than the split gains). So a split happens only when the tiles
// alone would leave half the resident slots empty, and it never makes a second round of
// blocks wait for the first (a round of 18 steps for a few blocks would cost what the split
// saved). Batch 32 on 132 SMs (396 slots): the 7 x 7 layer, 104 tiles of (128, 64) -> split
// 3, 312 blocks of 24 steps (4: 416 blocks, more than fit); the 56 x 56, 28 x 28, 14 x 14,
// stride-2 and 1 x 1 layers give 392-784 blocks already: split 1 (v6).
//
// Where v11 does not run its kernel: below compute capability 9.0 (no clusters), where the
// cluster launch would not fit (cudaOccupancyMaxActiveClusters returns 0: asked once per tile
// and split), and the shapes v6 hands to v4 (C % 8 != 0, unaligned x or w): v6 runs them, as
// v6 hands its own fallbacks to v4 and v8 its to v6.
// v11_implicit_gemm_cluster_splitk_2 and _4 force the split on every shape (comparison forms,
// tested on every shape class; the split falls back to v6 only on the GPU conditions above).
//
// Expected: the 7 x 7 layer near the other layers' time (2-3 blocks an SM instead of one, a
// third of the steps per block); the others as v6. The measured numbers: docs/ch10-conv.md.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v11_*' --small-cases
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v11_implicit_gemm_cluster_splitk,v6_implicit_gemm_pipelined,v8_implicit_gemm_wgmma,reference
#include <cstdint>

#include "device/cluster.cuh"
#include "runtime/errors.cuh"
#include "implicit_gemm_pipeline.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

using namespace pipelined;

constexpr int kMinSliceSteps = 4;  // the fewest K steps a block of a split walks

// grid (ceil(M / BM) kSplit, ceil(K / BN)) in clusters of (kSplit, 1, 1), block (kThreads),
// kSmem bytes of dynamic shared memory; v6's conditions on C, x, w (and vec_out).
template <class T, int kSplit>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    conv_cluster_splitk_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                               const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, bool vec_out) {
  extern __shared__ __align__(128) unsigned char smem[];  // the stages, then the partial tile
  __shared__ Folded sF[T::BN];
  const uint32_t sA = smem_u32(smem), sB = sA + T::kStages * T::kAStage;

  const int m0 = int(blockIdx.x / kSplit) * T::BM, k0 = blockIdx.y * T::BN;
  const int tid = threadIdx.x;
  if (tid < T::BN && k0 + tid < d.s.K) sF[tid] = fold_bn(bn, k0 + tid);  // read after the loop's barriers

  // This block's slice of the K loop (may be empty when steps < kSplit: its partial is 0).
  const int rank = int(cluster_rank());  // == blockIdx.x % kSplit
  const int t0 = int(int64_t(d.steps) * rank / kSplit), t1 = int(int64_t(d.steps) * (rank + 1) / kSplit);
  float acc[T::MI][T::NI][4];
  k_loop<T>(x, w, d, m0, k0, t0, t1, sA, sB, acc);

  float* out = reinterpret_cast<float*>(smem);
  park_accumulators<T>(acc, out);
  cluster_sync();  // every block's partial tile is parked and visible to the cluster

  // Rows [BM rank / kSplit, BM (rank + 1) / kSplit): the partials of blocks 0 .. kSplit - 1,
  // added in that order, then the epilogue.
  store_rows<T>(T::BM * rank / kSplit, T::BM * (rank + 1) / kSplit, m0, k0, d, sF, residual, y, vec_out,
                [&](int r, int c8, float(&v)[8]) {
                  const uint32_t at = smem_u32(out + r * kOutLd<T> + c8 * 8);
#pragma unroll
                  for (int j = 0; j < kSplit; ++j) {
                    const uint32_t peer = map_shared_rank(at, uint32_t(j));
                    const float4 lo = ld_cluster_f4(peer), hi = ld_cluster_f4(peer + 16);
                    if (j == 0) {
                      v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z;
                      v[7] = hi.w;
                    } else {
                      v[0] += lo.x, v[1] += lo.y, v[2] += lo.z, v[3] += lo.w, v[4] += hi.x, v[5] += hi.y;
                      v[6] += hi.z, v[7] += hi.w;
                    }
                  }
                });
  cluster_sync();  // no block exits while a peer may still read its partial
}

// The launch of the split kernel of tile T in clusters of kSplit blocks (cudaLaunchKernelEx
// with a cluster dimension; not copyable: cfg points at cluster).
template <class T, int kSplit>
struct SplitLaunch {
  cudaLaunchAttribute cluster{};
  cudaLaunchConfig_t cfg{};

  SplitLaunch(dim3 grid, cudaStream_t stream) {
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = kSplit;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    cfg.gridDim = grid;
    cfg.blockDim = dim3(T::kThreads);
    cfg.dynamicSmemBytes = T::kSmem;
    cfg.stream = stream;
    cfg.attrs = &cluster;
    cfg.numAttrs = 1;
  }
  SplitLaunch(const SplitLaunch&) = delete;
  SplitLaunch& operator=(const SplitLaunch&) = delete;

  static constexpr auto kernel() { return &conv_cluster_splitk_kernel<T, kSplit>; }

  // How many blocks of the kernel the GPU holds at once, in whole clusters (what fits in a
  // GPC: a cluster never spans two); 0 when no cluster fits. Asked once.
  static int resident_blocks() {
    static const int blocks = [] {
      wb::allow_dynamic_smem(kernel(), T::kSmem);
      const SplitLaunch one(dim3(kSplit), nullptr);
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, kernel(), &one.cfg) != cudaSuccess) {
        (void)cudaGetLastError();  // a refused query leaves no error behind
        clusters = 0;
      }
      return clusters * kSplit;
    }();
    return blocks;
  }

  static void launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
                     bool vec_out, cudaStream_t stream) {
    const SplitLaunch l(tile_grid<T>(d, kSplit), stream);
    CUDA_CHECK(cudaLaunchKernelEx(&l.cfg, kernel(), x, w, bn, residual, y, d, vec_out));
  }
};

template <class T>
int resident_blocks(int split) {
  switch (split) {
    case 2:
      return SplitLaunch<T, 2>::resident_blocks();
    case 3:
      return SplitLaunch<T, 3>::resident_blocks();
    default:
      return SplitLaunch<T, 4>::resident_blocks();
  }
}

// The split of the K loop for tile T (see the header): forced (2 or 4: the comparison forms),
// or the largest of 4, 3, 2 whose blocks the GPU holds all at once, each slice at least
// kMinSliceSteps long; 1 (v6) when none is. 1 also when no cluster of that split fits.
template <class T>
int pick_split(const Dims& d, int forced) {
  if (forced) return resident_blocks<T>(forced) > 0 ? forced : 1;
  const long long tiles = (long long)wb::ceil_div(d.M, T::BM) * wb::ceil_div(d.s.K, T::BN);
  for (int split = 4; split >= 2; --split) {
    if (d.steps >= split * kMinSliceSteps && tiles * split <= resident_blocks<T>(split)) return split;
  }
  return 1;
}

// Tile T split `split` ways (2 .. 4), or v6 when split is 1.
template <class T>
void launch(int split, const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
            bool vec_out, cudaStream_t stream) {
  switch (split) {
    case 1:
      v6_implicit_gemm_pipelined(x, w, bn, residual, y, d.s, stream);
      break;
    case 2:
      SplitLaunch<T, 2>::launch(x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 3:
      SplitLaunch<T, 3>::launch(x, w, bn, residual, y, d, vec_out, stream);
      break;
    default:
      SplitLaunch<T, 4>::launch(x, w, bn, residual, y, d, vec_out, stream);
      break;
  }
}

// forced_split: 0 (the launcher picks), 2 or 4 (the comparison forms).
void run(int forced_split, const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
         cudaStream_t stream) {
  require_valid(s);
  if (gpu().major < 9 || !takes(s, x, w)) {
    v6_implicit_gemm_pipelined(x, w, bn, residual, y, s, stream);
    return;
  }
  const Dims d = make_dims(s);
  const bool vec_out = vector_out(s, residual, y);
  // v6's tiles but (128, 128), whose 8 warps sit at the 128-register bound (2 blocks of 256
  // threads per SM): the split's one more live value in the K loop (the slice's end) spills there.
  switch (pick_tile<Tile128x64, Tile64x128, Tile64x64>(d.M, s.K, gpu().sms)) {
    case 0:
      launch<Tile128x64>(pick_split<Tile128x64>(d, forced_split), x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 1:
      launch<Tile64x128>(pick_split<Tile64x128>(d, forced_split), x, w, bn, residual, y, d, vec_out, stream);
      break;
    default:
      launch<Tile64x64>(pick_split<Tile64x64>(d, forced_split), x, w, bn, residual, y, d, vec_out, stream);
      break;
  }
}

}  // namespace

void v11_implicit_gemm_cluster_splitk(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                      ConvShape s, cudaStream_t stream) {
  run(0, x, w, bn, residual, y, s, stream);
}

void v11_implicit_gemm_cluster_splitk_2(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                        ConvShape s, cudaStream_t stream) {
  run(2, x, w, bn, residual, y, s, stream);
}

void v11_implicit_gemm_cluster_splitk_4(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                        ConvShape s, cudaStream_t stream) {
  run(4, x, w, bn, residual, y, s, stream);
}

}  // namespace ch10::solution
