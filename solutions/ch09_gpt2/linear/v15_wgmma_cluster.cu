// Step 15 (Hopper only) — the launchers of v15's kernel (linear/hopper/v15_wgmma_cluster.cu),
// with v12's checks and fallbacks (linear_on_hopper, linear/v12_wgmma_epilogue.cu): the
// cluster kernel on compute capability 9.0 where K % 8 == 0 and x, W are 16-byte aligned and
// the cost model prefers a CTA pair to v13, v13 where it does not, v8 where TMA cannot read
// the operands, an error on other GPUs (the tests skip the step there, with the reason).
//
// v15_wgmma_cluster is the step; v15_wgmma_cluster_multicast (pairs sharing x's box) and
// v15_wgmma_cluster_splitk (clusters of 4: sharing pairs on both halves of K) run one kind of
// cluster on every shape TMA takes, so that the tests check the kernel's sharing and its
// exchange on every shape class and the benchmark compares them where the cost model picks.
//
// Run: build/ch09/bin/ch09_bench --full --op=linear_bias/bf16 --impl=v15_wgmma_cluster,v13_wgmma_bias_ahead,reference
#include "ladder.cuh"

namespace ch09::solution {

void linear_wgmma_cluster(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K, Epilogue epi,
                          cudaStream_t stream) {
  linear_on_hopper(HopperStep::V15, x, w, b, y, M, N, K, epi, stream);
}

void linear_wgmma_cluster_multicast(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K,
                                    Epilogue epi, cudaStream_t stream) {
  linear_on_hopper(HopperStep::V15Multicast, x, w, b, y, M, N, K, epi, stream);
}

void linear_wgmma_cluster_splitk(const bf16* x, const bf16* w, const bf16* b, bf16* y, int M, int N, int K,
                                 Epilogue epi, cudaStream_t stream) {
  linear_on_hopper(HopperStep::V15SplitK, x, w, b, y, M, N, K, epi, stream);
}

}  // namespace ch09::solution
