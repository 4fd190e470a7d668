// Step 16 — the decode step's attention with each head's cached keys and values in shared memory
// before the wait: one CTA per head, no split of the keys and so no merge (gpt2 --decode=fused,
// BF16 and --int4, head size 64).
//
// What changes against chapter 8's v6_split_kv_mma in the fused step, and why:
//   * Chapter 8's kernel cuts the keys into chunks from the cache's capacity (16 chunks of 64 keys
//     for GPT-2's 1024 positions, 200 to 400 CTAs), asks L2 for each chunk's first tiles before
//     its wait, and after it: reads the length, copies the tiles from L2, sums, writes each
//     chunk's partial result, takes a ticket, and the last CTA of a head reads the partials back
//     and merges them. At GPT-2's 512 to 640 cached positions a chunk is one tile: the kernel is a
//     chain of about six trips to L2 after the wait, for 3 MB of keys and values that did not
//     change since the previous token.
//   * Here a head is one CTA of 512 threads. Before its wait it copies the head's first kMaxKeys
//     (640) cached keys and values into shared memory with cp.async (160 KB; they were written
//     by earlier steps: the one at the new position, which the QKV kernel writes meanwhile, is
//     read from the QKV row instead). After the wait: the position, the query and the new key
//     and value (one trip to L2), the scores from shared memory (thread t takes keys t, t + 512,
//     ...), the softmax's max and sum (two block reductions), and o = P V (warp w takes keys w,
//     w + 16, ...: the 32 lanes a row's 32 pairs of elements), the warps' sums added in order.
//     Keys past kMaxKeys (positions above 640) are read from global memory after the wait, their
//     lines asked of L2 before it.
//   * The rows are swizzled in shared memory (16-byte piece j of row r at j ^ (r % 8)), so that
//     the 8 lanes of a phase reading piece j of 8 consecutive rows meet 8 different bank groups,
//     and a warp reading one row's 32 words meets 32 different banks.
//   * 25 (GPT-2 1.5B) or 12 (124M) CTAs: few SMs, but each has its whole head in shared memory
//     when the wait returns, and the CTA fits beside the QKV kernel's (v15: 34 to 44 KB), so the
//     copies travel while that kernel runs. The next kernel may start at the wait.
// The sums are in FP32 (scores scaled by log2(e) / sqrt(D), exp2), each head's in a fixed order.
// Head sizes other than 64, or too little shared memory, run chapter 8's kernel (the caller).
//
// Measured (NVIDIA H200, random weights, prompt 512, 128 new, --decode=fused; against v15 with
// chapter 8's attention): GPT-2 124M 3,980.6 -> 4,331.1 tok/s (2.92x the PyTorch peer's 1,481),
// 1.5B 505.0 -> 528.6, 1.5B --int4 657.9 -> 718.1 (1.36x BF16; the target, 1.6x, is missed).
//
// Run: build/ch09/bin/gpt2 --weights=124M.safetensors --prompt-len=512 --new=128 --decode=fused
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "device/async_copy.cuh"
#include "device/pdl.cuh"
#include "device/reduce.cuh"
#include "device/vec.cuh"
#include "attention_ahead.cuh"
#include "ladder.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch_helpers.cuh"

namespace ch09::solution {
namespace {

using attn_ahead::kD;        // head size 64
using attn_ahead::kMaxKeys;  // 640 cached keys held in shared memory
constexpr int kThreads = 512, kWarps = kThreads / 32;

// grid (H), kThreads threads, dynamic shared memory (smem_bytes): attend_head's (attention_ahead.cuh).
__global__ void __launch_bounds__(kThreads, 1)
    attention_ahead_kernel(const bf16* __restrict__ qkv, const bf16* __restrict__ k_cache,
                           const bf16* __restrict__ v_cache, const int* __restrict__ pos_ptr, bf16* __restrict__ att,
                           int H, int P, int n_pre, float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[kWarps];
  attn_ahead::attend_head<kThreads>(qkv, k_cache, v_cache, pos_ptr, att, H, P, n_pre, scale_log2, smem, red,
                                    blockIdx.x);
}

constexpr size_t smem_bytes(int n_pre, int P) { return attn_ahead::smem_bytes<kThreads>(n_pre, P); }

}  // namespace

namespace {
int max_smem() {
  static const int v = [] {
    int dev = 0, bytes = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return bytes;
  }();
  return v;
}
}  // namespace

bool decode_attention_ahead_fits(int H, int D, int P) {
  return D == kD && H >= 1 && P >= 1 &&
         smem_bytes(std::min(P, kMaxKeys), P) + kWarps * sizeof(float) <= static_cast<size_t>(max_smem());
}

bool decode_attention_ahead(const bf16* qkv, const bf16* k_cache, const bf16* v_cache, const int* pos, bf16* att, int H,
                            int D, int P, float scale, cudaStream_t stream) {
  if (!decode_attention_ahead_fits(H, D, P) || !wb::aligned16(k_cache) || !wb::aligned16(v_cache)) return false;
  const int n_pre = std::min(P, kMaxKeys);
  const size_t smem = smem_bytes(n_pre, P);
  auto* kernel = &attention_ahead_kernel;
  static const bool raised = [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    max_smem() - static_cast<int>(kWarps * sizeof(float))));
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)raised;
  wb::launch_chained(kernel, dim3(H), dim3(kThreads), smem, stream, qkv, k_cache, v_cache, pos, att, H, P, n_pre,
                     scale * 1.4426950408889634f);
  return true;
}

}  // namespace ch09::solution
