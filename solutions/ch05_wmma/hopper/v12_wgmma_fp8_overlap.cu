// v12 (bonus, Hopper sm_90a only) — FP8 E4M3 GEMM on wgmma, per-tensor scales, the promotion
// overlapped with the next stage's wgmmas.
//
// What changes over v9: each consumer warpgroup keeps two `part` register sets that alternate
// by stage. v9 issues a stage's four wgmmas, waits for all of them (wait_group 0) and only then
// adds `part` into the FP32 `total`: while it adds, its own next wgmmas are not issued yet.
// v12 issues stage s + 1's wgmmas into the other part first, then waits with wait_group 1
// (only stage s's group must be done), releases stage s's shared memory to the producer and
// adds stage s's part into total while stage s + 1's wgmmas run. The adds go to the FP32
// pipe, the wgmmas to the tensor pipe: they overlap. For the same reason the next tile's
// first stage is issued before a tile's BF16 stores, which v9 does with the tensor cores idle.
//
// The price: a third set of 64 accumulators per thread (192 in all), which setmaxnreg's 232
// registers per consumer thread hold (the producer keeps 40: 128 x 40 + 256 x 232 <= 65,536).
// The K loop is unrolled by two so that which set is `part[s % 2]` is fixed at compile time.
// The sums are the same as v9's, in the same order: promotion every 128 of K, the same error.
// The pipeline and why each piece: hopper/wgmma_8bit_kernel.cuh (Promote::Overlapped).
//
// Run: build/ch05/bin/ch05_bench --full --op=gemm_fp8 --shape=8192 --impl=reference,v9_wgmma_fp8,v12_wgmma_fp8_overlap
#include "hopper.cuh"
#include "runtime/device.cuh"
#include "wgmma_8bit_kernel.cuh"

namespace ch05::solution {

void v12_wgmma_fp8_overlap(int M, int N, int K, const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                           const float* scale_b, __nv_bfloat16* D, cudaStream_t stream) {
  using namespace hopper::k8;
  run_fp8<Epi::Fp8Tensor, Promote::Overlapped>(M, N, K, A, B, scale_a, scale_b, D, stream, "v12_wgmma_fp8_overlap");
}

}  // namespace ch05::solution
