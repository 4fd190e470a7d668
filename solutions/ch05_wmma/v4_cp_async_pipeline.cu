// v4 — a 3-stage cp.async pipeline (sm_80+) in front of v3's warp tiles.
//
// What changes over v3: shared memory holds 3 tiles of A and B (stages). While the warps
// multiply the tile in stage s, the copies of the next two tiles are already in flight,
// issued with cp.async: they go from global to shared memory without passing through
// registers, so issuing them costs a few instructions and the warps go straight on to the
// tensor-core work. One barrier per step of K:
//
//   prologue: issue tiles 0 and 1 (one commit group each)
//   for each tile t:  wait until tile t has landed (cp.async.wait_group 1: at most one
//                     group, tile t+1, still in flight); __syncthreads();
//                     issue tile t+2 into the stage tile t-1 used (everyone is past it);
//                     multiply tile t.
//
// Edges need no extra path: a 16-byte copy whose source lies outside the matrix is issued
// with a source size of 0 and fills zeros. When K or N is no multiple of 16 bytes the
// copies could straddle the edge, so that case loads element by element (synchronously)
// into the same stages.
// Why faster: global-memory latency is hidden behind two tiles of tensor-core work.
//
// From wmma_common.cuh: as v3 (zero_tiles, mma_warp_tile, write_tiles); from harness/device/
// mma_pipeline.cuh: the launch above 48 KB of shared memory (launch_with_smem).
//
// Run: build/ch05/bin/ch05_bench --impl=v4_cp_async_pipeline,v3_wmma_warp_tiles,reference
#include "runtime/errors.cuh"
#include "device/async_copy.cuh"
#include "device/mma_pipeline.cuh"
#include "ladder.cuh"
#include "wmma_common.cuh"

namespace ch05::solution {
namespace {

using namespace nvcuda;
using namespace wb::ptx;  // cp.async (harness/device/async_copy.cuh)

constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 3;
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;         // 64 x 32 warp tile
[[maybe_unused]] constexpr int kFM = kWM / 16, kFN = kWN / 16;  // 4 x 2 fragments per warp (unused before sm_80)
constexpr int kThreads = kWarpsM * kWarpsN * 32;
static_assert(kStages >= 2, "a pipeline needs at least two stages");
static_assert(kBK % 16 == 0 && kWM % 16 == 0 && kWN % 16 == 0, "tiles are made of 16 x 16 fragments");

template <class In>
constexpr int a_stage_elems() {
  return (kBK / 16) * kBM * kPanelRow<In>;
}
template <class In>
constexpr int b_stage_elems() {
  return (kBN / 16) * kBK * kPanelRow<In>;
}
template <class In>
constexpr int smem_bytes() {
  return kStages * (a_stage_elems<In>() + b_stage_elems<In>()) * int(sizeof(In)) +
         kThreads / 32 * 256 * int(sizeof(acc_t<In>));
}

// Issues the copies of tile `t` (A rows row0.., B columns col0.., K from t * kBK) into a stage.
template <class In, bool kAsync>
__device__ __forceinline__ void load_tile(In* sA, In* sB, const In* A, const In* B, int M, int N, int K, int row0,
                                          int col0, int t) {
  const int k0 = t * kBK;
  if constexpr (kAsync) {
    constexpr int V = kVec<In>;
    for (int c = threadIdx.x; c < kBM * (kBK / V); c += kThreads) {
      const int r = c / (kBK / V), k = (c % (kBK / V)) * V, gr = row0 + r, gk = k0 + k;
      const bool in = gr < M && gk < K;
      cp_async_16(sA + a_panel<In, kBM>(r, k), in ? A + size_t(gr) * K + gk : A, in);
    }
    for (int c = threadIdx.x; c < kBK * (kBN / V); c += kThreads) {
      const int k = c / (kBN / V), col = (c % (kBN / V)) * V, gk = k0 + k, gc = col0 + col;
      const bool in = gk < K && gc < N;
      cp_async_16(sB + b_panel<In, kBK>(k, col), in ? B + size_t(gk) * N + gc : B, in);
    }
  } else {
    load_a_scalar<In, kBM, kBK, kThreads>(sA, A, M, K, row0, k0);
    load_b_scalar<In, kBK, kBN, kThreads>(sB, B, K, N, k0, col0);
  }
}

template <class In, class Out, bool kAsync>
__global__ void __launch_bounds__(kThreads)
    cp_async_pipeline_kernel(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Acc = acc_t<In>;
  extern __shared__ __align__(128) unsigned char smem[];
  In* sA = reinterpret_cast<In*>(smem);                                       // kStages x (kBM x kBK) tiles of A
  In* sB = sA + kStages * a_stage_elems<In>();                                // kStages x (kBK x kBN) tiles of B
  Acc* scratch = reinterpret_cast<Acc*>(sB + kStages * b_stage_elems<In>());  // 256 per warp

  const int warp = threadIdx.x / 32, wm = warp / kWarpsN, wn = warp % kWarpsN;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int tiles = (K + kBK - 1) / kBK;

  AccFragment<In> acc[kFM][kFN];
  zero_tiles<In>(acc);
  AFragment<In> a[kFM];  // one k step's fragments
  BFragment<In> b[kFN];

  // Prologue: the first kStages - 1 tiles in flight, one commit group per tile (a group
  // may be empty when K is short: the wait below counts groups, so commit anyway).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles)
      load_tile<In, kAsync>(sA + s * a_stage_elems<In>(), sB + s * b_stage_elems<In>(), A, B, M, N, K, row0, col0, s);
    cp_async_commit();
  }

  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<kStages - 2>();  // this thread's copies of tile t have landed ...
    __syncthreads();               // ... and everyone's; everyone is also done with tile t - 1

    const int next = t + kStages - 1;  // refill the stage tile t - 1 used
    if (next < tiles) {
      const int s = next % kStages;
      load_tile<In, kAsync>(sA + s * a_stage_elems<In>(), sB + s * b_stage_elems<In>(), A, B, M, N, K, row0, col0,
                            next);
    }
    cp_async_commit();

    const In* a_tile = sA + (t % kStages) * a_stage_elems<In>();
    const In* b_tile = sB + (t % kStages) * b_stage_elems<In>();
    mma_warp_tile<In, kBM, kBK, kWM, kWN>(acc, a, b, a_tile, b_tile, wm, wn);
  }
  cp_async_wait<0>();  // nothing may still be writing shared memory when the block ends

  write_tiles<In, Out>(acc, scratch + warp * 256, row0 + wm * kWM, col0 + wn * kWN, M, N, C, D);
#else
  __trap();  // not reached: cp.async needs sm_80, and the tests skip older GPUs
#endif
}

template <class In, class Out, bool kAsync>
void launch(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  const dim3 grid((N + kBN - 1) / kBN, (M + kBM - 1) / kBM);
  wb::gemm::launch_with_smem<&cp_async_pipeline_kernel<In, Out, kAsync>>(grid, kThreads, smem_bytes<In>(), stream, M, N,
                                                                         K, A, B, C, D);
}

}  // namespace

CH05_LAUNCHER(v4_cp_async_pipeline) {
  if (M <= 0 || N <= 0) return;
  if (rows_aligned(A, B, N, K)) {
    launch<In, Out, true>(M, N, K, A, B, C, D, stream);
  } else {
    launch<In, Out, false>(M, N, K, A, B, C, D, stream);
  }
}

CH05_INSTANTIATE_ALL(v4_cp_async_pipeline);

}  // namespace ch05::solution
