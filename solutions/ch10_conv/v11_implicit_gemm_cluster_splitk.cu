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
// What changed from v6 (the same K loop and staged epilogue: implicit_gemm_pipeline.cuh):
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
//   64)), against a K loop of 4 or more steps that each copy 24 KB into the block.
//   With a split of 1 the kernel is v6's (no cluster, no barrier but the block's).
//   * one more tile, (128, 128) on 4 warps of (64, 64) (v6's (128, 128) has 8 of (64, 32)):
//     v6's steps are bound by shared memory as much as by latency. A block step moves
//     (warps x (WM + WN) + BM + BN) x 128 bytes through shared memory (the warps' ldmatrix
//     reads, the block's cp.async writes): 72 KB for 524 K MACs at (128, 64), 48 KB for 262 K
//     at (64, 64), 96 KB for 1 M on this tile, a quarter to a half fewer bytes per MAC. At 128
//     bytes a cycle, three (128, 64) blocks need 1,730 cycles (~1 us) a step, most of the 1.36 us
//     a step that v6's 28 x 28 and 1 x 1 layers imply (37.1 and 23.5 us for 18 and 8 steps). It holds 247 registers a
//     thread, 2 blocks an SM, and makes few tiles, which the split makes up for. (v6's own (128, 128) tile is left out:
//     its 8 warps sit at the 128-register bound, and the split's one more live value in the K loop, the slice's end,
//     spills there.)
//
// The tile and split per shape: the least cycles of a model of the busiest SM, over the four
// tiles x splits 1 to 4 (each slice at least kMinSliceSteps = 4 steps: fewer and the fill
// costs more than the split gains). Blocks are dealt round-robin; kMinBlocks of them are
// resident an SM; a round of n resident blocks takes, per step, the longer of one block's step
// latency (kStepLatency = 1,400 cycles, from v6 on the 7 x 7 layer, one block an SM) and n
// steps' shared-memory bytes at 128 a cycle; each round adds a fill (one step latency) and
// the partial tile parked and read back. Ties go to the tile listed first and the smaller split.
// Batch 32 on 132 SMs, what it picks (model cycles; v6's choice in the same model):
//   56 x 56, 64 -> 64       (128, 64), split 1: v6's tile and kernel      37.0 K (37.0 K)
//   28 x 28, 128 -> 128     (128, 128) of 4 warps, split 1, 196 blocks    31.1 K (34.0 K)
//   14 x 14, 256 -> 256     (128, 128) of 4 warps, split 2, 196 blocks    31.1 K (52.6 K)
//   7 x 7, 512 -> 512       (128, 128) of 4 warps, split 4, 208 blocks    31.1 K (103 K)
//   1 x 1, 512 -> 128       (128, 128) of 4 warps, split 1, 196 blocks    15.7 K (16.8 K)
//   3 x 3 stride 2, 256     (128, 128) of 4 warps, split 2, 196 blocks    31.1 K (52.6 K)
// A model, not a measurement: the comparison forms below let the benchmark check it.
//
// Where v11 does not run its kernel: below compute capability 9.0 (no clusters), where no
// cluster of the chosen split fits (cudaOccupancyMaxActiveClusters returns 0: asked once per
// tile and split), and the shapes v6 hands to v4 (C % 8 != 0, unaligned x or w): v6 runs
// them, as v6 hands its own fallbacks to v4 and v8 its to v6.
// Comparison forms (tested on every shape class, benchmarked when named):
// v11_implicit_gemm_cluster_splitk_persistent (where a shape has at least 3 steps: one block per
// resident slot walking tiles of (128, 64), the copies one stream from tile to tile, so that
// the next tile's first steps fly during this one's epilogue; see conv_persistent_kernel) and
// v11_implicit_gemm_cluster_splitk_v6tiles (v6's tiles alone: what the 4-warp tile adds).
//
// Expected: the 7 x 7 layer near the other layers' time (2 blocks an SM of 18 steps instead
// of one of 72), the 14 x 14 and stride-2 layers a third faster, the others level with v6 or
// a little faster. The measured numbers: docs/ch10-conv.md.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v11_*' --small-cases
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v11_implicit_gemm_cluster_splitk,v11_implicit_gemm_cluster_splitk_persistent,
//      v11_implicit_gemm_cluster_splitk_v6tiles,v6_implicit_gemm_pipelined,v8_implicit_gemm_wgmma,reference
#include <algorithm>
#include <cstdint>

#include "device/cluster.cuh"
#include "runtime/errors.cuh"
#include "implicit_gemm_pipeline.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

using namespace pipelined;

constexpr int kMinSliceSteps = 4;  // the fewest K steps a block of a split walks

// The model's two constants (see the header): the cycles one 64-deep step of a block takes
// when it has its SM's scheduler to itself (v6 on the 7 x 7 layer: 70.6 us over 72 steps, one
// block an SM, less the launch, fill and epilogue, at ~1.75 GHz), and the bytes shared memory
// moves per cycle per SM.
constexpr double kStepLatency = 1400.0;
constexpr double kSmemBytesPerCycle = 128.0;

// v6's (128, 128) tile on 4 warps of (64, 64) instead of 8 of (64, 32): a quarter fewer
// shared-memory bytes per MAC (each warp reads 64 + 64 rows per 64 x 64 MACs, not 64 + 32
// per 64 x 32), 247 registers a thread, 2 blocks an SM.
using Tile128x128w4 = Tile<128, 128, 2, 2, 3, 2>;

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
  const int rank = kSplit == 1 ? 0 : int(cluster_rank());  // == blockIdx.x % kSplit
  const int t0 = int(int64_t(d.steps) * rank / kSplit), t1 = int(int64_t(d.steps) * (rank + 1) / kSplit);
  float acc[T::MI][T::NI][4];
  k_loop<T>(x, w, d, m0, k0, t0, t1, sA, sB, acc);

  float* out = reinterpret_cast<float*>(smem);
  park_accumulators<T>(acc, out);
  if constexpr (kSplit == 1) {  // no cluster: v6's epilogue
    __syncthreads();
    store_rows<T>(0, T::BM, m0, k0, d, sF, residual, y, vec_out,
                  [&](int r, int c8, float(&v)[8]) { read_staged<T>(out, r, c8, v); });
    return;
  }
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

// The persistent form (v11_implicit_gemm_cluster_splitk_persistent, a comparison form): one
// block per resident slot walks the tiles blockIdx.x, + gridDim.x, ... (filters fastest), its
// copies one stream from tile to tile (k_loop's kStream): the next tile's first kStages - 1
// steps are in flight while this tile's epilogue runs, from its own buffer after the stages.
// No split. At least kStages steps (the stream issues a whole prologue at each tile's end).
using TilePersistent = Tile<128, 64, 2, 2, 3, 2>;  // (128, 64) with the output buffer: 2 blocks an SM
constexpr int kPersistentSmem = TilePersistent::kPipe + TilePersistent::kOut;

// grid (min(tiles, resident blocks)), block (kThreads), kPersistentSmem bytes.
__global__ void __launch_bounds__(TilePersistent::kThreads, TilePersistent::kMinBlocks)
    conv_persistent_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                           const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, int tiles_n, int tiles,
                           bool vec_out) {
  using T = TilePersistent;
  extern __shared__ __align__(128) unsigned char smem[];  // the stages, then the output tile
  __shared__ Folded sF[T::BN];
  const uint32_t sA = smem_u32(smem), sB = sA + T::kStages * T::kAStage;
  float* out = reinterpret_cast<float*>(smem + T::kPipe);
  const int tid = threadIdx.x;

  Streamed stream{0, false, false, 0, 0};
  float acc[T::MI][T::NI][4];
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int next = tile + gridDim.x;
    const int m0 = tile / tiles_n * T::BM, k0 = tile % tiles_n * T::BN;
    stream.has_next = next < tiles;
    stream.next_m0 = next / tiles_n * T::BM;
    stream.next_k0 = next % tiles_n * T::BN;
    k_loop<T, true>(x, w, d, m0, k0, 0, d.steps, sA, sB, acc, stream);

    // The epilogue while the next tile's first steps land. out and sF were last read by the
    // tile before's epilogue, which every thread finished before this tile's first barrier.
    park_accumulators<T>(acc, out);
    if (tid < T::BN && k0 + tid < d.s.K) sF[tid] = fold_bn(bn, k0 + tid);
    __syncthreads();
    store_rows<T>(0, T::BM, m0, k0, d, sF, residual, y, vec_out,
                  [&](int r, int c8, float(&v)[8]) { read_staged<T>(out, r, c8, v); });
    stream.stage0 = (stream.stage0 + d.steps) % T::kStages;
    stream.primed = true;
  }
}

// The persistent form's launch; false (nothing launched) below kStages steps.
bool launch_persistent(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
                       bool vec_out, cudaStream_t stream) {
  using T = TilePersistent;
  if (d.steps < T::kStages) return false;
  static const int resident = [] {
    wb::allow_dynamic_smem(&conv_persistent_kernel, kPersistentSmem);
    int per_sm = 0;
    CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, &conv_persistent_kernel, T::kThreads, kPersistentSmem));
    return per_sm * gpu().sms;
  }();
  const int tiles_n = wb::ceil_div(d.s.K, T::BN);
  const long long tiles = (long long)wb::ceil_div(d.M, T::BM) * tiles_n;
  if (resident <= 0 || tiles > (1LL << 31) - 1) return false;
  const int grid = int(std::min<long long>(tiles, resident));
  conv_persistent_kernel<<<grid, T::kThreads, kPersistentSmem, stream>>>(x, w, bn, residual, y, d, tiles_n, int(tiles),
                                                                         vec_out);
  WB_CHECK_LAUNCH();
  return true;
}

// The launch of the kernel of tile T in clusters of kSplit blocks (cudaLaunchKernelEx with a
// cluster dimension; kSplit 1: no cluster). Not copyable: cfg points at cluster.
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
    cfg.numAttrs = kSplit > 1 ? 1 : 0;
  }
  SplitLaunch(const SplitLaunch&) = delete;
  SplitLaunch& operator=(const SplitLaunch&) = delete;

  static constexpr auto kernel() { return &conv_cluster_splitk_kernel<T, kSplit>; }

  // Whether a cluster of the kernel fits on this GPU at all (cudaOccupancyMaxActiveClusters:
  // a cluster never spans two GPCs). Asked once; the dynamic shared memory is allowed here.
  static bool fits() {
    static const bool ok = [] {
      wb::allow_dynamic_smem(kernel(), T::kSmem);
      if (kSplit == 1) return true;
      const SplitLaunch one(dim3(kSplit), nullptr);
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, kernel(), &one.cfg) != cudaSuccess) {
        (void)cudaGetLastError();  // a refused query leaves no error behind
        clusters = 0;
      }
      return clusters > 0;
    }();
    return ok;
  }

  // False (nothing launched) when no cluster fits.
  static bool launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
                     bool vec_out, cudaStream_t stream) {
    if (!fits()) return false;
    const SplitLaunch l(tile_grid<T>(d, kSplit), stream);
    CUDA_CHECK(cudaLaunchKernelEx(&l.cfg, kernel(), x, w, bn, residual, y, d, vec_out));
    return true;
  }
};

template <class T>
bool launch(int split, const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
            bool vec_out, cudaStream_t stream) {
  switch (split) {
    case 1:
      return SplitLaunch<T, 1>::launch(x, w, bn, residual, y, d, vec_out, stream);
    case 2:
      return SplitLaunch<T, 2>::launch(x, w, bn, residual, y, d, vec_out, stream);
    case 3:
      return SplitLaunch<T, 3>::launch(x, w, bn, residual, y, d, vec_out, stream);
    default:
      return SplitLaunch<T, 4>::launch(x, w, bn, residual, y, d, vec_out, stream);
  }
}

// --- the choice of tile and split (the header's model) ---------------------------------

// Shared-memory bytes a block moves per 64-deep step: every warp's ldmatrix reads of its
// WM + WN rows, and the cp.async writes of the block's BM + BN rows, 128 bytes each.
template <class T>
constexpr double step_bytes() {
  return double(T::kThreads / 32 * (T::WM + T::WN) + T::BM + T::BN) * kRowBytes;
}

// The model's cycles for the busiest SM with tile T split `split` ways: blocks dealt
// round-robin, T::kMinBlocks of them resident an SM (what the tile's registers and shared
// memory allow); a round of n resident blocks takes, per step, the longer of one block's step
// latency and the shared-memory bytes of n steps at 128 bytes a cycle, plus a pipeline fill
// and the partial tile parked and read back.
template <class T>
double model_cycles(const Dims& d, int split, int sms) {
  const long long blocks = (long long)wb::ceil_div(d.M, T::BM) * wb::ceil_div(d.s.K, T::BN) * split;
  const long long per_sm = wb::ceil_div(blocks, (long long)sms);
  const long long rounds = wb::ceil_div(per_sm, (long long)T::kMinBlocks);
  const double n = double(per_sm < T::kMinBlocks ? per_sm : T::kMinBlocks);
  const double step = std::max(kStepLatency, n * step_bytes<T>() / kSmemBytesPerCycle);
  const double partials = n * 8.0 * T::BM * T::BN / kSmemBytesPerCycle;
  return double(rounds) * (wb::ceil_div(d.steps, split) * step + kStepLatency + partials);
}

struct Choice {
  int tile, split;  // tile: the index in Tiles...
  double cycles;
};

// The (tile, split) of least model_cycles among Tiles... and the splits allowed (forced: that
// one; otherwise 1 to 4, each slice at least kMinSliceSteps long); ties to the tile listed
// first and the smaller split.
template <class... Tiles>
Choice choose(const Dims& d, int forced_split, int sms) {
  Choice best{0, 1, 0.0};
  bool any = false;
  int index = 0;
  auto consider = [&](int tile, int split, double cycles) {
    if (!any || cycles < best.cycles) best = Choice{tile, split, cycles};
    any = true;
  };
  (
      [&] {
        for (int split = 1; split <= 4; ++split) {
          if (forced_split ? split != forced_split : split > 1 && d.steps < split * kMinSliceSteps) continue;
          consider(index, split, model_cycles<Tiles>(d, split, sms));
        }
        ++index;
      }(),
      ...);
  return best;
}

// forced_split: 0 (the model picks), or the split to run; narrow: v6's tiles only (no
// (128, 128) tile of 4 warps); persistent: the persistent form where it applies.
void run(int forced_split, bool narrow, bool persistent, const bf16* x, const bf16* w, BnParams bn,
         const bf16* residual, bf16* y, ConvShape s, cudaStream_t stream) {
  require_valid(s);
  if (gpu().major < 9 || !takes(s, x, w)) {
    v6_implicit_gemm_pipelined(x, w, bn, residual, y, s, stream);
    return;
  }
  const Dims d = make_dims(s);
  const bool vec_out = vector_out(s, residual, y);
  if (persistent && launch_persistent(x, w, bn, residual, y, d, vec_out, stream)) return;
  const int sms = gpu().sms;
  const Choice c = narrow ? choose<Tile128x64, Tile64x128, Tile64x64>(d, forced_split, sms)
                          : choose<Tile128x64, Tile64x128, Tile64x64, Tile128x128w4>(d, forced_split, sms);
  bool done = false;
  switch (c.tile) {
    case 0:
      done = launch<Tile128x64>(c.split, x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 1:
      done = launch<Tile64x128>(c.split, x, w, bn, residual, y, d, vec_out, stream);
      break;
    case 2:
      done = launch<Tile64x64>(c.split, x, w, bn, residual, y, d, vec_out, stream);
      break;
    default:
      done = launch<Tile128x128w4>(c.split, x, w, bn, residual, y, d, vec_out, stream);
      break;
  }
  if (!done) v6_implicit_gemm_pipelined(x, w, bn, residual, y, s, stream);  // no cluster of the split fits
}

}  // namespace

void v11_implicit_gemm_cluster_splitk(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                      ConvShape s, cudaStream_t stream) {
  run(0, false, false, x, w, bn, residual, y, s, stream);
}

void v11_implicit_gemm_cluster_splitk_persistent(const bf16* x, const bf16* w, BnParams bn, const bf16* residual,
                                                 bf16* y, ConvShape s, cudaStream_t stream) {
  run(0, false, true, x, w, bn, residual, y, s, stream);
}

void v11_implicit_gemm_cluster_splitk_v6tiles(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                              ConvShape s, cudaStream_t stream) {
  run(0, true, false, x, w, bn, residual, y, s, stream);
}

}  // namespace ch10::solution
