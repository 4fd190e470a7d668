// v1 — one thread per row: the loop a CPU programmer writes first, moved onto the GPU.
//
// Thread n owns row n and walks it three times:
//   pass 1  h[c] = bf16(x[c] + r[c]), stored; sum += h[c]            -> mean
//   pass 2  sq  += (h[c] - mean)^2   (h read back from memory)        -> rstd
//   pass 3  y[c] = (h[c] - mean) * rstd * gamma[c] + beta[c]
//
// Why it is slow: at any moment the 32 threads of a warp touch 32 different rows, ld
// elements apart, so each 2-byte access of each lane is its own 32-byte sector: a warp's
// load moves 1 KB across the memory bus to use 64 bytes. The L1 cache catches some of the
// neighbours a sector brought in, if they survive until the thread's next iteration;
// with many rows in flight they mostly do not. And parallelism follows N: 32768 rows are
// 32768 threads, a sixth of what an H100 holds at once; a decode batch of 1 is ONE thread
// on the whole GPU, walking 4096 elements with a chain of dependent adds.
// (Correct, though: the mean is taken before the squares, as the numerics demand.)
//
// From norm_common.cuh: store_stats (the row's mean and rstd out).
//
// Run: build/ch06/bin/ch06_bench --impl=v1_thread_per_row,v2_block_smem_reduce
#include "ladder.cuh"
#include "norm_common.cuh"

namespace ch06::solution {
namespace {

constexpr int kThreads = 128;

template <Norm kNorm>
__global__ void __launch_bounds__(kThreads)
    thread_per_row_kernel(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                          float* mean_out, float* rstd_out, int N, int C, int ld, float eps) {
  const int n = blockIdx.x * kThreads + threadIdx.x;
  if (n >= N) return;
  const bf16* xr = row_ptr(x, n, ld);
  const bf16* rr = row_ptr(r, n, ld);
  bf16* hr = row_ptr(h, n, ld);
  bf16* yr = row_ptr(y, n, ld);

  float sum = 0.0f;  // LayerNorm: sum of h; RMSNorm: sum of h^2
  for (int c = 0; c < C; ++c) {
    const bf16 hv = __float2bfloat16_rn(__bfloat162float(xr[c]) + __bfloat162float(rr[c]));
    hr[c] = hv;
    const float v = __bfloat162float(hv);  // the statistics see h as rounded
    sum += kNorm == Norm::Layer ? v : v * v;
  }
  float mean = 0.0f, rstd;
  if constexpr (kNorm == Norm::Layer) {
    mean = sum / C;
    float sq = 0.0f;
    for (int c = 0; c < C; ++c) {
      const float d = __bfloat162float(hr[c]) - mean;
      sq += d * d;
    }
    rstd = rsqrtf(sq / C + eps);
  } else {
    rstd = rsqrtf(sum / C + eps);
  }
  for (int c = 0; c < C; ++c) {
    const float v = (__bfloat162float(hr[c]) - mean) * rstd * __bfloat162float(gamma[c]);
    yr[c] = __float2bfloat16_rn(kNorm == Norm::Layer ? v + __bfloat162float(beta[c]) : v);
  }
  store_stats<kNorm>(mean_out, rstd_out, n, mean, rstd);
}

}  // namespace

void v1_residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,
                           float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  thread_per_row_kernel<Norm::Layer>
      <<<ceil_div(N, kThreads), kThreads, 0, stream>>>(x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps);
  WB_CHECK_LAUNCH();
}

void v1_residual_rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N, int C,
                         int ld, float eps, cudaStream_t stream) {
  if (N == 0) return;
  thread_per_row_kernel<Norm::Rms>
      <<<ceil_div(N, kThreads), kThreads, 0, stream>>>(x, r, gamma, nullptr, h, y, nullptr, rstd, N, C, ld, eps);
  WB_CHECK_LAUNCH();
}

}  // namespace ch06::solution
