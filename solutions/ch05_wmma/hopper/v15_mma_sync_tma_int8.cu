// v15 (Hopper sm_90a only) — v8's INT8 mma.sync GEMM on v14's pipeline (TMA, mbarriers, one
// block per SM walking its tiles), with B read as Bt (N x K): the transposed copy that v11's
// prepare step makes (hopper::int8_arrange_b, untimed, as the cuBLASLt reference arranges
// its B), so that B's fragments come from plain ldmatrix and v8's byte permutes go. The
// kernel: hopper/mma_sync_tma_kernel.cuh; the launcher that decides between this path and
// v8: solutions/ch05_wmma/v15_mma_sync_tma_int8.cu.
//
// Run: build/ch05/bin/ch05_bench --op=gemm/i8_i32 --impl=reference,v8_mma_sync_int8,v15_mma_sync_tma_int8
#include "hopper.cuh"
#include "mma_sync_tma_kernel.cuh"

namespace ch05::solution::hopper {

void mma_tma_int8_gemm(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
                       cudaStream_t stream) {
  const int8_t* bt = int8_arranged_b(N, K, B, stream);
  mt::launch<int8_t, int32_t>(M, N, K, A, bt, C, D, stream, "v15_mma_sync_tma_int8");
}

}  // namespace ch05::solution::hopper
