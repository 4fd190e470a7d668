// v14 (bonus, Hopper only) — the launcher: v6's GEMM with the two consumers' epilogues taking
// turns, so that each overlaps the other's main loop, and stream-K for a short last wave (the
// kernel and why: hopper/v14_wgmma_store_overlap.cu). This file holds only host code, so it
// builds everywhere.
//
// Which path a call takes:
//   * compute capability 9.0, K and N multiples of 8, 16-byte aligned A and B (v6's conditions):
//       - 16-bit output without C, D 16-byte aligned: the v14 kernel;
//       - FP32 output, or D = A * B + C: v6's kernel and register epilogue;
//   * any other shape: v5_mma_sync, as v6 (the tests cover every path);
//   * any other GPU: an error. The tests skip this set there, with the reason.
// The stream-K workspace comes from the step's prepare (hopper::store_overlap_prepare); without
// it, no stream-K. The measured alternative v14_wgmma_store_overlap_sk takes stream-K wherever
// it can (also where the last wave is nearly full and it does not pay).
//
// Run: build/ch05/bin/ch05_bench --op=gemm/bf16_bf16 --shape=4096 --impl=reference,v6_wgmma_tma,v14_wgmma_store_overlap
#include <stdexcept>

#include "ladder.cuh"
#include "runtime/device.cuh"

#ifdef WB_CH05_HOPPER
#include "hopper/hopper.cuh"
#endif

namespace ch05::solution {
namespace {

#ifndef WB_CH05_HOPPER
enum class StoreOverlap { Base, AlwaysStreamK };
#else
using hopper::StoreOverlap;
#endif

template <class In, class Out>
void store_overlap(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, StoreOverlap form,
                   cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
#ifdef WB_CH05_HOPPER
  hopper::require_wgmma("v14_wgmma_store_overlap");
  if (hopper::supports(M, N, K, A, B)) {
    hopper::gemm_store_overlap<In, Out>(M, N, K, A, B, C, D, form, stream);
    return;
  }
#endif
  (void)form;
  v5_mma_sync<In, Out>(M, N, K, A, B, C, D, stream);
}

}  // namespace

CH05_LAUNCHER(v14_wgmma_store_overlap) { store_overlap<In, Out>(M, N, K, A, B, C, D, StoreOverlap::Base, stream); }
CH05_LAUNCHER(v14_wgmma_store_overlap_sk) {
  store_overlap<In, Out>(M, N, K, A, B, C, D, StoreOverlap::AlwaysStreamK, stream);
}

CH05_INSTANTIATE_16BIT(v14_wgmma_store_overlap);
CH05_INSTANTIATE_16BIT(v14_wgmma_store_overlap_sk);

}  // namespace ch05::solution
