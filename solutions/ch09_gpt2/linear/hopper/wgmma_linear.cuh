// What the two Hopper steps of the prefill GEMM (v12_wgmma_epilogue, v13_wgmma_bias_ahead)
// share on the host: the SM count, the tensor maps kept from call to call, the launch of
// harness/device/wgmma_gemm.cuh's kmajor_gemm_kernel for one tile and one epilogue, and the
// tiles with v12's cost model that picks one (v12_wgmma_epilogue.cu's header says why). Each
// step keeps its epilogue.
// Built for sm_90a alone (chapters/ch09_gpt2/extra.cmake).
#pragma once
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>

#include "device/wgmma_gemm.cuh"
#include "epilogue.cuh"
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch09::solution::hopper::linear {

using wb::sm90::KMajorTile;

// Stages of (BM + BN) x 128 bytes: as many as fit in 200 KB, at most 8.
template <int BM, int BN>
using Tile = KMajorTile<BM, BN, std::min(8, (200 * 1024) / ((BM + BN) * 128))>;

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
  [[maybe_unused]] static const bool raised = wb::allow_dynamic_smem(kernel, T::kSmem);  // once per kernel
  thread_local MapEntry map_x, map_w;
  const CUtensorMap& mx = map_of(map_x, x, M, K, T::BM, who);  // x: M rows of K, (64, BM) boxes
  const CUtensorMap& mw = map_of(map_w, w, N, K, T::BN, who);  // W: N rows of K, (64, BN) boxes
  const long long tiles = (long long)ceil_div(M, T::BM) * ceil_div(N, T::BN);
  const int grid = int(std::min<long long>(tiles, sms));  // persistent: at most one CTA per SM
  kernel<<<grid, T::kThreads, T::kSmem, stream>>>(mx, mw, M, N, K, store);
  WB_CHECK_LAUNCH();
}

// The tiles a launcher picks from, and v12's score for a (BM, BN) tile: waves x (K steps x
// the larger of a 64-deep step's math, BM BN / 32 cycles, and its L2 bytes, (BM + BN) 128 at
// ~64 bytes per cycle, + ~1500 cycles of fill and epilogue).
using Tiles = std::tuple<Tile<128, 256>, Tile<128, 208>, Tile<128, 160>, Tile<128, 128>, Tile<128, 96>, Tile<128, 72>,
                         Tile<64, 112>, Tile<64, 48>>;

inline double score(int bm, int bn, int M, int N, int K, int sms) {
  const double tiles = double(ceil_div(M, bm)) * ceil_div(N, bn);
  const double waves = std::ceil(tiles / sms);
  const double math = bm * bn / 32.0, bytes = (bm + bn) * 2.0;  // cycles per 64-deep step
  return waves * (ceil_div(K, 64) * std::max(math, bytes) + 1500.0);
}

// run(T{}) for the cheapest tile T of Tiles on the shape (the first one on a tie).
template <class Run>
void with_best_tile(int M, int N, int K, int sms, Run&& run) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    double best_score = INFINITY;
    size_t best = 0;
    auto consider = [&](size_t i, double s) {
      if (s < best_score) best_score = s, best = i;
    };
    (consider(I, score(std::tuple_element_t<I, Tiles>::BM, std::tuple_element_t<I, Tiles>::BN, M, N, K, sms)), ...);
    ((best == I ? (run(std::tuple_element_t<I, Tiles>{}), true) : false) || ...);
  }
  (std::make_index_sequence<std::tuple_size_v<Tiles>>{});
}

}  // namespace ch09::solution::hopper::linear

namespace ch09::solution::hopper {

// v12's epilogue, one column pair (c, c + 1) of rows r and r + 8 at a time: + bias,
// GELU, one rounding, stored where it lies inside y. pairs: N even and y 4-byte aligned (a
// pair is one store). (v13's BiasAheadStore loads the bias earlier and stores the same way.)
struct BiasStore {
  const bf16* b;
  bf16* y;
  int M, N;
  Epilogue epi;
  bool pairs;

  // Row r's pair: v + bias, the epilogue, one rounding, stored where it lies inside y.
  __device__ __forceinline__ void row(int r, int c, float2 v, float2 bias, bool two) const {
    if (r >= M) return;
    const bf16 y0 = epilogue_value<bf16>(v.x, bias.x, epi);
    bf16* dst = y + size_t(r) * N + c;
    if (two) {
      const bf16 y1 = epilogue_value<bf16>(v.y, bias.y, epi);
      if (pairs) {
        *reinterpret_cast<__nv_bfloat162*>(dst) = __halves2bfloat162(y0, y1);
      } else {
        dst[0] = y0;
        dst[1] = y1;
      }
    } else {
      dst[0] = y0;
    }
  }
  __device__ __forceinline__ void operator()(int r, int c, float2 lo, float2 hi) const {
    if (c >= N) return;
    const bool two = c + 1 < N;
    float2 bias = make_float2(0.0f, 0.0f);
    if (epi != Epilogue::None) {
      bias.x = to_float(b[c]);
      if (two) bias.y = to_float(b[c + 1]);
    }
    row(r, c, lo, bias, two);
    row(r + 8, c, hi, bias, two);
  }
};

}  // namespace ch09::solution::hopper
