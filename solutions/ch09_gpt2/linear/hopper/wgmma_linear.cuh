// What the two Hopper steps of the prefill GEMM (v12_wgmma_epilogue, v13_wgmma_measured_tiles)
// share on the host: the SM count, the tensor maps kept from call to call, the launch of
// harness/device/wgmma_gemm.cuh's kmajor_gemm_kernel for one tile and one epilogue, and the
// list of tiles a launcher picks from. Each step keeps its epilogue and its way of choosing.
// Built for sm_90a alone (chapters/ch09_gpt2/extra.cmake).
#pragma once
#include <cuda.h>

#include <algorithm>
#include <cstdint>

#include "device/wgmma_gemm.cuh"
#include "hopper.cuh"
#include "runtime/errors.cuh"

namespace ch09::solution::hopper::linear {

using wb::sm90::KMajorTile;

// Stages of (BM + BN) x 128 bytes: as many as fit in 200 KB, at most 8.
template <int BM, int BN>
using Tile = KMajorTile<BM, BN, std::min(8, (200 * 1024) / ((BM + BN) * 128))>;

inline int sm_count() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  static int counts[64] = {};
  if (dev < 64 && counts[dev] > 0) return counts[dev];
  int n = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  if (dev < 64) counts[dev] = n;
  return n;
}

// The tensor map of one operand (rows of K, (64, box_rows) boxes), kept for the next call with
// the same matrix and box: timing a call does not time the encoding, and the model's
// layers, each with its own W, encode once per call (a host call of a few microseconds).
// thread_local: two host threads never share an entry.
struct MapEntry {
  const bf16* base = nullptr;
  int rows = 0, K = 0, box_rows = 0;
  CUtensorMap map{};
};
inline const CUtensorMap& map_of(MapEntry& e, const bf16* base, int rows, int K, int box_rows, const char* who) {
  if (e.base != base || e.rows != rows || e.K != K || e.box_rows != box_rows) {
    e.map = wb::sm90::make_tensor_map_2d(base, uint64_t(K), uint64_t(rows), 64, uint32_t(box_rows), who);
    e.base = base, e.rows = rows, e.K = K, e.box_rows = box_rows;
  }
  return e.map;
}

// y = epilogue(x · Wᵀ) on tile T with the epilogue functor `store`: a persistent grid of at
// most one CTA per SM. The maps are kept per (tile, store type): one per instantiation.
template <class T, class Store>
void launch(const bf16* x, const bf16* w, int M, int N, int K, const Store& store, int sms, cudaStream_t stream,
            const char* who) {
  auto* kernel = &wb::sm90::kmajor_gemm_kernel<T, bf16, Store>;
  static const bool raised = [&] {  // above 48 KB of dynamic shared memory needs the opt-in
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmem));
    return true;
  }();
  (void)raised;
  thread_local MapEntry map_x, map_w;
  const CUtensorMap& mx = map_of(map_x, x, M, K, T::BM, who);  // x: M rows of K, (64, BM) boxes
  const CUtensorMap& mw = map_of(map_w, w, N, K, T::BN, who);  // W: N rows of K, (64, BN) boxes
  const long long tiles = (long long)ceil_div(M, T::BM) * ceil_div(N, T::BN);
  const int grid = int(std::min<long long>(tiles, sms));  // persistent: at most one CTA per SM
  kernel<<<grid, T::kThreads, T::kSmem, stream>>>(mx, mw, M, N, K, store);
  WB_CHECK_LAUNCH();
}

}  // namespace ch09::solution::hopper::linear
