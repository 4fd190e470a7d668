// v14 (Hopper sm_90a only) — v7's mma.sync GEMM fed by TMA, stages released by mbarriers, one
// block per SM walking its tiles (FP16 and BF16 inputs). The kernel and why it is built this
// way: hopper/mma_sync_tma_kernel.cuh. The launcher that decides between this path and v7:
// solutions/ch05_wmma/v14_mma_sync_tma.cu.
//
// Run: build/ch05/bin/ch05_bench --impl=reference,v7_mma_sync_k64,v14_mma_sync_tma
#include "hopper.cuh"
#include "mma_sync_tma_kernel.cuh"

namespace ch05::solution::hopper {

template <class In, class Out>
void mma_tma_gemm(int M, int N, int K, const In* A, const In* B, const Out* C, Out* D, cudaStream_t stream) {
  mt::launch<In, Out>(M, N, K, A, B, C, D, stream, "v14_mma_sync_tma");
}

template void mma_tma_gemm<__half, float>(int, int, int, const __half*, const __half*, const float*, float*,
                                          cudaStream_t);
template void mma_tma_gemm<__half, __half>(int, int, int, const __half*, const __half*, const __half*, __half*,
                                           cudaStream_t);
template void mma_tma_gemm<__nv_bfloat16, float>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*,
                                                 const float*, float*, cudaStream_t);
template void mma_tma_gemm<__nv_bfloat16, __nv_bfloat16>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*,
                                                         const __nv_bfloat16*, __nv_bfloat16*, cudaStream_t);

}  // namespace ch05::solution::hopper
