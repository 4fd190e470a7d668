// Step 13 (Hopper sm_90a only) — v12's kernel with the bias loaded ahead of the K loop.
//
// What changes over v12_wgmma_epilogue, and why. Nsight Compute on v12 at 512 x 2304 x 768 (an
// H200): 12.5 µs, the SMs busy 75 % of it and issuing on 27 % of their cycles; the top stall,
// 30 % of a warp's cycles, is waiting on an L1TEX (global) load. The only global loads a
// consumer warp makes are in the epilogue: v12 loads bias[c], bias[c + 1] for each 8-column
// chunk and then stores the chunk. y and bias are both plain pointers, so the compiler may
// not move a chunk's bias load above the previous chunk's stores: each chunk pays a load's
// latency after the last wgmma, while nothing else runs on the tile.
//
// Here each consumer thread loads its column pairs (WN / 8 of them) into registers before the
// tile's K loop (kmajor_gemm_kernel's kColumnsAhead path, harness/device/wgmma_gemm.cuh), so
// the latency hides behind the wgmmas and the epilogue is arithmetic and stores only. Values,
// rounding, tiles (v12's cost model, linear::with_best_tile) and everything else are v12's.
// Measured (docs/ch09-transformer.md): 3-7 % faster than v12 on GPT-2 124M's prefill shapes,
// no change on 1.5B's, whose tiles run 25 steps of K and more.
//
// Run: build/ch09/bin/ch09_bench --full --op=linear_bias/bf16 --impl=v13_wgmma_bias_ahead,v12_wgmma_epilogue,cublaslt
#include <cstdint>

#include "wgmma_linear.cuh"

namespace ch09::solution::hopper {

// v12's BiasStore with the bias of a column pair passed in (kColumnsAhead): the kernel loads
// columns(c) for each of the thread's pairs before the K loop.
struct BiasAheadStore : BiasStore {
  static constexpr bool kColumnsAhead = true;

  // The bias of columns c and c + 1 (0 past N, or when the op has none).
  __device__ __forceinline__ float2 columns(int c) const {
    if (epi == Epilogue::None || c >= N) return make_float2(0.0f, 0.0f);
    return make_float2(to_float(b[c]), c + 1 < N ? to_float(b[c + 1]) : 0.0f);
  }
  __device__ __forceinline__ void operator()(int r, int c, float2 lo, float2 hi, float2 bias) const {
    if (c >= N) return;
    const bool two = c + 1 < N;
    row(r, c, lo, bias, two);
    row(r + 8, c, hi, bias, two);
  }
};

void linear_wgmma_bias_ahead(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                             cudaStream_t stream) {
  const int sms = wb::sm_count();
  const bool pairs = N % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
  const BiasAheadStore store{{b, y, M, N, epi, pairs}};
  linear::with_best_tile(M, N, K, sms, [&](auto tile) {
    linear::launch<decltype(tile)>(x, w, M, N, K, store, sms, stream, "v13_wgmma_bias_ahead");
  });
}

}  // namespace ch09::solution::hopper
