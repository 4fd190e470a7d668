// v15 (bonus, Hopper sm_90a only) — v12 (FP8 E4M3, per-tensor scales, the promotion overlapped
// with the next stage's wgmmas) with a TMA-store epilogue.
//
// What changes over v12: the BF16 results no longer leave from the registers. v12 writes each
// thread's 64 values as 4-byte pairs, half of each 32-byte sector per instruction, and 128 x 128
// x 2 bytes per tile is as much output per tile as v6's BF16 GEMM has per half tile, with twice
// the tensor-core rate behind it: at 8192^3 the stores are a larger share of an FP8 tile's time
// than of a BF16 one's. v15 does what v6 does: each consumer warpgroup rounds its 64 x 128 half
// (times the two scales) into a 16 KB swizzled tile in shared memory, with stmatrix (16 bytes
// per lane and instruction: four 8 x 8 blocks whose elements sit in the lanes as the
// accumulators do), one thread stores the two 64 x 64 boxes with TMA, and the warpgroup goes
// on. The 32 KB of output tile fit beside v12's six 32 KB stages (225 KB in all). As in v12 the
// next tile's first stage is issued before the epilogue, so the tensor cores have work during it.
// The sums, their order and the rounding are v12's: the same results bit for bit. A D that is
// not 16-byte aligned (TMA's rule) takes v12's kernel.
// The kernel is v12's template (hopper/wgmma_8bit_kernel.cuh) with D's tensor map as an extra
// parameter.
//
// Run: build/ch05/bin/ch05_bench --full --op=gemm_fp8 --shape=8192
// --impl=reference,v12_wgmma_fp8_overlap,v15_wgmma_fp8_tma_store
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_8bit_kernel.cuh"

namespace ch05::solution {

void v15_wgmma_fp8_tma_store(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                             const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  using namespace hopper::k8;
  run_fp8<Epi::Fp8Tensor, Promote::Overlapped, true>(M, N, K, A, B, scale_a, scale_b, D, stream,
                                                     "v15_wgmma_fp8_tma_store");
}

}  // namespace ch05::solution
