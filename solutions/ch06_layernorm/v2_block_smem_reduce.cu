// v2 — one block per row; the block's threads stride over the row, and each sum is a tree
// in shared memory (chapter 3, sequential addressing).
//
// What changes over v1: a row belongs to 256 threads instead of one. Thread t handles
// elements t, t + 256, t + 512, ... so a warp's 32 lanes read 32 NEIGHBOURING elements:
// 64 bytes of BF16 in two sectors, every byte used (coalesced). The three passes stay:
//
//   pass 1  h = bf16(x + r), stored; partial sums        tree -> mean   (shared memory)
//   pass 2  (h - mean)^2, h read back from memory         tree -> rstd
//   pass 3  y = (h - mean) * rstd * gamma + beta
//
// Why it is faster: coalescing alone turns each 32-byte sector into 16 useful elements
// instead of one, and a grid of N blocks of 256 threads fills the GPU from a few hundred
// rows on. What it still wastes: h makes two extra trips (write, then two reads that mostly
// hit L2, not DRAM), each element is a 2-byte load (a warp moves 64 bytes per instruction;
// 16-byte loads move 512), and each tree costs 8 barriers. Those are v3's and v4's work.
//
// This kernel is also the FP32 LayerNorm of exercise 1, and the fallback of v4 to v6 for
// rows too long to hold in registers (more than 65536 BF16): it handles any C and ld.
//
// From norm_common.cuh: store_stats (the row's mean and rstd out).
//
// Run: build/ch06/bin/ch06_bench --impl=v2_block_smem_reduce,v1_thread_per_row
#include "ladder.cuh"
#include "norm_common.cuh"

namespace ch06::solution {
namespace {

constexpr int kThreads = 256;

// The block's sum of v, returned to every thread: a tree in shared memory, then a
// broadcast of tile[0]. Ends with a barrier, so a second call may reuse `tile` at once.
__device__ float smem_block_sum(float v, float* tile) {
  const int t = threadIdx.x;
  tile[t] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (t < s) tile[t] += tile[t + s];
    __syncthreads();
  }
  const float total = tile[0];
  __syncthreads();  // everyone has read tile[0] before the next call overwrites it
  return total;
}

// kResidual: h = bf16(x + r) is formed, stored and normalised; otherwise x is normalised.
template <class T, Norm kNorm, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    block_row_kernel(const T* x, const T* r, const T* gamma, const T* beta, T* h, T* y, float* mean_out,
                     float* rstd_out, int C, int ld, float eps) {
  __shared__ float tile[kThreads];  // (kThreads) one partial per thread
  const int n = blockIdx.x;
  const T* xr = row_ptr(x, n, ld);
  const T* src = xr;  // what the statistics and y read: x, or h once it is written
  float sum = 0.0f;
  if constexpr (kResidual) {
    const T* rr = row_ptr(r, n, ld);
    T* hr = row_ptr(h, n, ld);
    for (int c = threadIdx.x; c < C; c += kThreads) {
      const T hv = from_float<T>(to_float(xr[c]) + to_float(rr[c]));
      hr[c] = hv;
      const float v = to_float(hv);
      sum += kNorm == Norm::Layer ? v : v * v;
    }
    src = hr;  // each thread reads back only the elements it wrote itself
  } else {
    for (int c = threadIdx.x; c < C; c += kThreads) {
      const float v = to_float(xr[c]);
      sum += kNorm == Norm::Layer ? v : v * v;
    }
  }
  sum = smem_block_sum(sum, tile);

  float mean = 0.0f, rstd;
  if constexpr (kNorm == Norm::Layer) {
    mean = sum / C;
    float sq = 0.0f;
    for (int c = threadIdx.x; c < C; c += kThreads) {
      const float d = to_float(src[c]) - mean;
      sq += d * d;
    }
    rstd = rsqrtf(smem_block_sum(sq, tile) / C + eps);
  } else {
    rstd = rsqrtf(sum / C + eps);
  }

  T* yr = row_ptr(y, n, ld);
  for (int c = threadIdx.x; c < C; c += kThreads) {
    float v = (to_float(src[c]) - mean) * rstd * to_float(gamma[c]);
    if constexpr (kNorm == Norm::Layer) v += to_float(beta[c]);
    yr[c] = from_float<T>(v);
  }
  if (threadIdx.x == 0) store_stats<kNorm>(mean_out, rstd_out, n, mean, rstd);
}

}  // namespace

void v2_layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd, int N,
                      int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  block_row_kernel<float, Norm::Layer, false>
      <<<N, kThreads, 0, stream>>>(x, nullptr, gamma, beta, nullptr, y, mean, rstd, C, ld, eps);
  WB_CHECK_LAUNCH();
}

void v2_residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                           float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  block_row_kernel<bf16, Norm::Layer, true>
      <<<N, kThreads, 0, stream>>>(x, r, gamma, beta, h, y, mean, rstd, C, ld, eps);
  WB_CHECK_LAUNCH();
}

void v2_residual_rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N, int C,
                         int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  block_row_kernel<bf16, Norm::Rms, true>
      <<<N, kThreads, 0, stream>>>(x, r, gamma, nullptr, h, y, nullptr, rstd, C, ld, eps);
  WB_CHECK_LAUNCH();
}

}  // namespace ch06::solution
