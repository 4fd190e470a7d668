// v11 — v6's implicit GEMM with two schedules v6 lacks: the K sum split over the two blocks of
// a thread-block cluster (sm_90), their partial tiles added through distributed shared memory
// (no workspace, one launch); and, where tiles are few, one block a tile with room for more
// registers. v6 everywhere else.
//
// Why: on the layers with few output tiles v6 leaves the GPU waiting on latency, not on a
// roofline. The 7 x 7 layer (M = 1,568 pixels, K = 512 filters, a 4,608-deep sum at batch 32)
// gives v6 104 blocks of (128, 64) for 132 SMs: one block of 4 warps per SM, each walking 72
// steps of 64 channels (70.6 us against cuDNN's 25.3). v6 cannot split the sum: its launcher
// has no workspace for FP32 partials, and the first call runs under stream capture, where an
// allocation is refused. A cluster needs none: its blocks run at the same time on one GPC, and
// each can read the others' shared memory.
//
// What changed from v6 (the same tiles, K loop and staged epilogue: implicit_gemm_pipeline.cuh):
//   * the split: a grid of (ceil(M / BM) x 2, ceil(K / BN)) blocks in clusters of (2, 1, 1),
//     the 2 blocks of a cluster on one (BM, BN) output tile. Block rank j runs the K loop over
//     steps [steps j / 2, steps (j + 1) / 2) (a step: one tap of one 64-channel chunk, as in
//     v6) from its own cp.async stages, parks its FP32 partial tile in its own shared memory
//     (over the idle stages, as v6 parks its tile), then the cluster barrier (release /
//     acquire: the partials are visible cluster-wide). Block j then takes rows
//     [BM j / 2, BM (j + 1) / 2) of the tile: for each it reads its 8 channels from both
//     blocks' partials (mapa: harness/device/cluster.cuh), adds them in rank order 0, 1 (the
//     same order whichever block reduces: the sums are deterministic), and applies v6's fused
//     bias + BN + residual + ReLU once, 16-byte stores of y. A second cluster barrier before
//     exit: no block leaves while its peer may still read its partial. Cost: each block's
//     (BM x BN x 4)-byte partial crosses the cluster once (32 KB at (128, 64)).
//   * few tiles (no more (128, 64) tiles than SMs): the persistent kernel below, which here
//     gives each block one tile. It is v6's (128, 64) tile bounded at 2 blocks an SM instead of
//     3, so the compiler may use 201 registers instead of 168, with the output tile in its own
//     buffer: a block alone on its SM steps ~1.6x faster (the measured 7 x 7 layer: 45.0 us
//     against v6's 70.3 with the same 104 blocks).
//
// Where the split runs: the least time of a model of the busiest SM, fitted to v6's times on
// an H200 (it gives them within 2 %, the 1 x 1 layer within 11 %), over v6's three tiles that
// fit 3 blocks an SM x splits 1 and 2 (each slice at least kMinSliceSteps = 4 steps): the
// busiest SM runs ceil(blocks / SMs) blocks one after another, each costing a fill, an
// epilogue and its reduction (kBlockUs = 1.7 us) and its slice of steps, a step 0.55 us for
// (128, 64) and (64, 128), 0.294 us for (64, 64) when the SM holds 2-3 blocks, 0.91 (0.49) for
// a block alone; plus a launch (3 us). A split of 1 is v6 itself. Batch 32 on 132 SMs (H200,
// one run, median us; the 7 x 7 row by the comparison form, which runs there what v11 now
// does; docs/ch10-conv.md):
//   layer              v11 runs                               v11     v6    cuDNN fused
//   56 x 56, 64        v6                                     42.8    42.8  27.7
//   28 x 28, 128       v6                                     37.3    37.3  23.8
//   14 x 14, 256       (128, 64) split 2, 392 blocks x 18     38.8    39.7  21.1
//   7 x 7, 512         one block a tile, 104 x 72 steps       45.0    70.3  24.6
//   1 x 1, 512 -> 128  v6                                     23.6    23.7  18.8
//   stride 2, 256      (128, 64) split 2, 392 blocks x 18     39.3    41.0  21.0
// On the 7 x 7 layer splits 2, 3 and 5 of (128, 64) measured 54.1, 47.9 and 64.8 us against
// the model's 46.0, 47.7 and 42.8 (it does not see what more blocks an SM cost there), and
// none came near one block a tile with more registers (45.0); so splits stop at 2, which the
// model picks on the 14 x 14 and stride-2 layers (2-5 % below v6 in both runs). A (128, 128)
// tile on 4 warps of (64, 64) (a third fewer shared-memory bytes per MAC, 247 registers, 2
// blocks an SM) was 5-20 % slower than v6's tiles on every layer it was tried on: gone.
//
// Where v11 runs v6: below compute capability 9.0 (no clusters), where the model picks split
// 1, where no cluster fits (wb::cluster::max_active returns 0: asked once per tile), and the
// shapes v6 hands to v4 (C % 8 != 0, unaligned x or w), as v6 hands its own fallbacks to v4
// and v8 its to v6.
// Comparison forms (tested on every shape class, benchmarked when named):
// v11_implicit_gemm_cluster_splitk_split2, the split of 2 on every shape whose slices hold at
// least 4 steps each (the tile the model's best at that split; v6 below): v11 itself splits only
// large layers, so this form is what puts the split kernels through every shape class.
// v11_implicit_gemm_cluster_splitk_persistent, the persistent kernel on every shape of at
// least 3 steps: one block per resident slot (2 an SM) walking (128, 64) tiles, its copies one
// stream from tile to tile, so that the next tile's first steps fly during this one's
// epilogue. It lost 10-30 % to v6 on the many-tile layers (2 blocks an SM instead of 3, tiles
// dealt unevenly over 264 blocks); v11 keeps it for the few-tile case only.
//
// Run: build/ch10/bin/ch10_solution_tests --gtest_filter='*v11_*' --small-cases
//      build/ch10/bin/ch10_bench --op=conv2d_bn_relu/bf16
//      --impl=v11_implicit_gemm_cluster_splitk,v11_implicit_gemm_cluster_splitk_persistent,
//      v6_implicit_gemm_pipelined,v8_implicit_gemm_wgmma,reference
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

constexpr int kMaxSplit = 2;  // the splits measured to pay (the header says why no more)

// The model's constants (see the header), measured on an H200 (docs/ch10-conv.md, v6 and
// v11's first run), in microseconds: a launch; a block's fill, epilogue and reduction; one
// 64-deep step of a block when its SM runs 2-3 blocks (the SM's throughput shared out), and
// when it runs one alone (the step's latency).
constexpr double kLaunchUs = 3.0;
constexpr double kBlockUs = 1.7;
template <class T>
constexpr double step_us() {
  return T::BM * T::BN == 64 * 64 ? 0.294 : 0.55;  // (64, 64); (128, 64) and (64, 128)
}
template <class T>
constexpr double lone_step_us() {
  return T::BM * T::BN == 64 * 64 ? 0.49 : 0.91;  // (64, 64): (128, 64)'s, scaled by the steps' ratio
}

// grid (ceil(M / BM) kSplit, ceil(K / BN)) in clusters of (kSplit, 1, 1), block (kThreads),
// kSmem bytes of dynamic shared memory; v6's conditions on C, x, w (and vec_out). sm_90 and
// newer (the launcher runs v6 elsewhere).
template <class T, int kSplit>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    conv_cluster_splitk_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, BnParams bn,
                               const bf16* __restrict__ residual, bf16* __restrict__ y, Dims d, bool vec_out) {
  static_assert(kSplit >= 2 && kSplit <= kMaxSplit, "a split of 1 is v6");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];  // the stages, then the partial tile
  __shared__ Folded sF[T::BN];
  const uint32_t sA = smem_u32(smem), sB = sA + T::kStages * T::kAStage;

  const int m0 = int(blockIdx.x / kSplit) * T::BM, k0 = blockIdx.y * T::BN;
  const int tid = threadIdx.x;
  if (tid < T::BN && k0 + tid < d.s.K) sF[tid] = fold_bn(bn, k0 + tid);  // read after the loop's barriers

  // This block's slice of the K loop (the launcher keeps each at least kMinSliceSteps long).
  const int rank = int(wb::cluster::rank());  // == blockIdx.x % kSplit
  const int t0 = int(int64_t(d.steps) * rank / kSplit), t1 = int(int64_t(d.steps) * (rank + 1) / kSplit);
  float acc[T::MI][T::NI][4];
  k_loop<T>(x, w, d, m0, k0, t0, t1, sA, sB, acc);

  float* out = reinterpret_cast<float*>(smem);
  park_accumulators<T>(acc, out);
  wb::cluster::sync();  // every block's partial tile is parked and visible to the cluster

  // Rows [BM rank / kSplit, BM (rank + 1) / kSplit): the partials of blocks 0 .. kSplit - 1,
  // read through distributed shared memory and added in that order, then the epilogue.
  store_rows<T>(T::BM * rank / kSplit, T::BM * (rank + 1) / kSplit, m0, k0, d, sF, residual, y, vec_out,
                [&](int r, int c8, float(&v)[8]) {
                  float4* at = reinterpret_cast<float4*>(out + r * kOutLd<T> + c8 * 8);
#pragma unroll
                  for (int j = 0; j < kSplit; ++j) {
                    const float4* peer = wb::cluster::map(at, unsigned(j));
                    const float4 lo = peer[0], hi = peer[1];
                    if (j == 0) {
                      v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z;
                      v[7] = hi.w;
                    } else {
                      v[0] += lo.x, v[1] += lo.y, v[2] += lo.z, v[3] += lo.w, v[4] += hi.x, v[5] += hi.y;
                      v[6] += hi.z, v[7] += hi.w;
                    }
                  }
                });
  __syncwarp();         // the rows' loop may leave a warp apart; the cluster barrier is .aligned
  wb::cluster::sync();  // no block exits while a peer may still read its partial
#else
  (void)x, (void)w, (void)bn, (void)residual, (void)y, (void)d, (void)vec_out;
#endif
}

// The persistent kernel (v11's few-tile schedule, where each block gets one tile; on every
// shape, the comparison form v11_implicit_gemm_cluster_splitk_persistent): one
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

// The split kernel of tile T in clusters of kSplit blocks (harness/device/cluster.cuh).
template <class T, int kSplit>
struct SplitLaunch {
  static constexpr auto kernel() { return &conv_cluster_splitk_kernel<T, kSplit>; }

  // Whether a cluster of the kernel fits on this GPU at all (a cluster never spans two GPCs).
  // Asked once; the dynamic shared memory is allowed here.
  static bool fits() {
    static const bool ok = [] {
      wb::allow_dynamic_smem(kernel(), T::kSmem);
      return wb::cluster::max_active(kernel(), T::kThreads, kSplit, T::kSmem) > 0;
    }();
    return ok;
  }

  // False (nothing launched) when no cluster fits.
  static bool launch(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, const Dims& d,
                     bool vec_out, cudaStream_t stream) {
    if (!fits()) return false;
    const wb::cluster::Config config(tile_grid<T>(d, kSplit), T::kThreads, kSplit, stream, T::kSmem);
    CUDA_CHECK(cudaLaunchKernelEx(config.get(), kernel(), x, w, bn, residual, y, d, vec_out));
    return true;
  }
};

// --- the choice of tile and split (the header's model) ---------------------------------

// The model's time (us) with tile T split `split` ways: the busiest SM runs ceil(blocks / SMs)
// blocks one after another, each a fill, an epilogue and its slice of steps; a step takes
// step_us when the SM holds 2 or more blocks at once, and one block alone waits on its own
// latency (lone_step_us).
template <class T>
double model_us(const Dims& d, int split, int sms) {
  const long long blocks = (long long)wb::ceil_div(d.M, T::BM) * wb::ceil_div(d.s.K, T::BN) * split;
  const long long per_sm = wb::ceil_div(blocks, (long long)sms);
  const double together = double(per_sm < T::kMinBlocks ? per_sm : T::kMinBlocks);
  const double step = std::max(step_us<T>(), lone_step_us<T>() / together);
  return kLaunchUs + double(per_sm) * (wb::ceil_div(d.steps, split) * step + kBlockUs);
}

struct Choice {
  int tile, split;  // tile: the index in Tiles...
  double us;
};

// The (tile, split) of least model_us among Tiles... and the splits 1 .. kMaxSplit (each slice
// at least kMinSliceSteps long); ties to the tile listed first and the smaller split. With
// `only` > 0, the splits other than `only` are passed over (split 1 if none is left).
template <class... Tiles>
Choice choose(const Dims& d, int sms, int only = 0) {
  Choice best{0, 1, 0.0};
  bool any = false;
  int index = 0;
  (
      [&] {
        for (int split = 1; split <= kMaxSplit; ++split) {
          if (split > 1 && d.steps < split * kMinSliceSteps) break;
          if (only > 0 && split != only) continue;
          const double us = model_us<Tiles>(d, split, sms);
          if (!any || us < best.us) best = Choice{index, split, us};
          any = true;
        }
        ++index;
      }(),
      ...);
  return best;
}

// Which schedule runs: v11's choice, or one of the two comparison forms (the persistent kernel
// on every shape it takes; the split on every shape whose slices are long enough, the tile the
// model's best at that split: the split kernels' test coverage, since the choice splits only
// at batch 32 on the 14 x 14 and stride-2 layers, larger than the tests' shapes).
enum class Form { Chosen, PersistentEverywhere, SplitEverywhere };

void run(Form form, const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y, ConvShape s,
         cudaStream_t stream) {
  require_valid(s);
  if (gpu().major < 9 || !takes(s, x, w)) {
    v6_implicit_gemm_pipelined(x, w, bn, residual, y, s, stream);
    return;
  }
  const Dims d = make_dims(s);
  const bool vec_out = vector_out(s, residual, y);
  // No more (128, 64) tiles than SMs: one block a tile, v6's tile at 2 blocks an SM (room for
  // 201 registers where v6 has 168: a block alone on its SM steps ~1.6x faster).
  const long long tiles = (long long)wb::ceil_div(d.M, TilePersistent::BM) * wb::ceil_div(s.K, TilePersistent::BN);
  const bool persistent = form == Form::PersistentEverywhere || (form == Form::Chosen && tiles <= gpu().sms);
  if (persistent && launch_persistent(x, w, bn, residual, y, d, vec_out, stream)) return;
  const int only = form == Form::SplitEverywhere ? kMaxSplit : 0;
  const Choice c = choose<Tile128x64, Tile64x128, Tile64x64>(d, gpu().sms, only);
  bool done = false;
  if (c.split > 1) {  // split 1: v6 as it is (its own tile choice, the (128, 128) tile included)
    switch (c.tile) {
      case 0:
        done = SplitLaunch<Tile128x64, kMaxSplit>::launch(x, w, bn, residual, y, d, vec_out, stream);
        break;
      case 1:
        done = SplitLaunch<Tile64x128, kMaxSplit>::launch(x, w, bn, residual, y, d, vec_out, stream);
        break;
      default:
        done = SplitLaunch<Tile64x64, kMaxSplit>::launch(x, w, bn, residual, y, d, vec_out, stream);
        break;
    }
  }
  if (!done) v6_implicit_gemm_pipelined(x, w, bn, residual, y, s, stream);  // split 1, or no cluster fits
}

}  // namespace

void v11_implicit_gemm_cluster_splitk(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                      ConvShape s, cudaStream_t stream) {
  run(Form::Chosen, x, w, bn, residual, y, s, stream);
}

void v11_implicit_gemm_cluster_splitk_persistent(const bf16* x, const bf16* w, BnParams bn, const bf16* residual,
                                                 bf16* y, ConvShape s, cudaStream_t stream) {
  run(Form::PersistentEverywhere, x, w, bn, residual, y, s, stream);
}

void v11_implicit_gemm_cluster_splitk_split2(const bf16* x, const bf16* w, BnParams bn, const bf16* residual, bf16* y,
                                             ConvShape s, cudaStream_t stream) {
  run(Form::SplitEverywhere, x, w, bn, residual, y, s, stream);
}

}  // namespace ch10::solution
