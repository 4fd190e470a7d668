// v1 — unfused: the three ops of attention's first half as three kernels, then O = P V.
//
//   scores_kernel    S[bh][i][j] = scale * q_i . k_j        one thread per score
//   mask_kernel      S[bh][i][j] = -inf where j > i + Sk - Sq  (only with the mask)
//   softmax_kernel   each row of S in place -> P, and lse    one block per row
//   pv_kernel        O[bh][i][d] = sum_j P[bh][i][j] V[bh][j][d]   one thread per output
//
// The probabilities op (exercise 2's) stops after the softmax, with S kept in p itself; the
// attention op keeps S in its scratch buffer (B * H * Sq * Sk floats).
//
// This is the shape of attention in a framework that runs each op as its own kernel, and the
// baseline of the chapter: the Sq x Sk matrix of every head crosses DRAM five times (scores
// written; mask read and written; softmax read and written, plus its re-reads that L2 may
// absorb) before P V reads it a sixth. At B = 4, H = 16, Sq = Sk = 4096 that matrix is
// 4.3 GB: about 26 GB of traffic, several milliseconds at 3 TB/s, for an op whose inputs and
// outputs are 67 MB. The kernels themselves are the plainest that are correct (q and k read
// straight from global memory, no tiling): v2 fixes the traffic, v3 and v4 the arithmetic.
//
// Run: build/ch08/bin/ch08_bench --impl=v1_unfused,cublas_gemm_softmax,cublas_unfused
#include <cmath>

#include "attention_common.cuh"
#include "runtime/errors.cuh"
#include "device/reduce.cuh"
#include "ladder.cuh"

namespace ch08::solution {
namespace {

constexpr int kRowThreads = 256;   // softmax: threads per row
constexpr int kElemThreads = 256;  // mask: threads per block

// A block of 32 keys (x) by 8 queries (y) of one head (z). Lanes of a warp share the query
// (its row of q is broadcast) and read 32 different rows of k: uncoalesced, served by L1/L2.
__global__ void scores_kernel(const float* q, const float* k, float* s, int Sq, int Sk, int D, float scale) {
  const int j = blockIdx.x * 32 + threadIdx.x, i = blockIdx.y * 8 + threadIdx.y;
  if (i >= Sq || j >= Sk) return;
  const size_t bh = blockIdx.z;
  const float* qi = q + (bh * Sq + i) * D;
  const float* kj = k + (bh * Sk + j) * D;
  float acc = 0.0f;
  for (int d = 0; d < D; ++d) acc = fmaf(qi[d], kj[d], acc);
  s[(bh * Sq + i) * Sk + j] = acc * scale;
}

// Every element of every head, grid-stride: -inf where the key is right of row i's last
// visible key, i + Sk - Sq.
__global__ void mask_kernel(float* s, int Sq, int Sk, size_t n) {
  for (size_t e = static_cast<size_t>(blockIdx.x) * kElemThreads + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * kElemThreads) {
    const int j = static_cast<int>(e % Sk);
    const int i = static_cast<int>(e / Sk % Sq);
    if (j > i + Sk - Sq) s[e] = -INFINITY;
  }
}

// One block per row of S (B * H * Sq rows): max, sum of exp, then p in place. A row of only
// -inf (it sees no key) becomes 0s with lse = -inf.
__global__ void softmax_kernel(float* s, float* lse, int Sk) {
  __shared__ float red[kRowThreads / 32];
  float* row = s + static_cast<size_t>(blockIdx.x) * Sk;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < Sk; j += kRowThreads) mx = fmaxf(mx, row[j]);
  mx = wb::block_reduce<kRowThreads>(mx, wb::Max{}, red);  // to every thread (harness/device/reduce.cuh)
  if (mx == -INFINITY) {                                   // the same in every thread: the whole block leaves here
    for (int j = threadIdx.x; j < Sk; j += kRowThreads) row[j] = 0.0f;
    if (threadIdx.x == 0 && lse != nullptr) lse[blockIdx.x] = -INFINITY;
    return;
  }
  float sum = 0.0f;
  for (int j = threadIdx.x; j < Sk; j += kRowThreads) sum += expf(row[j] - mx);  // exp(-inf) = 0
  __syncthreads();  // every thread has read red: it may be written again
  sum = wb::block_reduce<kRowThreads>(sum, wb::Sum{}, red);
  const float inv = 1.0f / sum;
  for (int j = threadIdx.x; j < Sk; j += kRowThreads) row[j] = expf(row[j] - mx) * inv;
  if (threadIdx.x == 0 && lse != nullptr) lse[blockIdx.x] = mx + logf(sum);
}

// A block of 32 columns of d (x) by 8 rows (y); each thread owns d = x, x + 32, x + 64,
// x + 96 (D <= 128). The warp reads one p (broadcast) and 32 consecutive values of v per key.
__global__ void pv_kernel(const float* p, const float* v, float* o, int Sq, int Sk, int D) {
  const int i = blockIdx.x * 8 + threadIdx.y;
  if (i >= Sq) return;
  const size_t bh = blockIdx.y;
  const float* pi = p + (bh * Sq + i) * Sk;
  const float* vh = v + bh * Sk * D;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int j = 0; j < Sk; ++j) {
    const float pj = pi[j];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int d = threadIdx.x + 32 * c;
      if (d < D) acc[c] = fmaf(pj, vh[static_cast<size_t>(j) * D + d], acc[c]);
    }
  }
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int d = threadIdx.x + 32 * c;
    if (d < D) o[(bh * Sq + i) * D + d] = acc[c];
  }
}

// S, mask, softmax into `s` (B * H * Sq * Sk floats); lse may be null.
void probs_into(const float* q, const float* k, float* s, float* lse, int B, int H, int Sq, int Sk, int D, float scale,
                bool causal, cudaStream_t stream) {
  const int bh = B * H;
  const dim3 grid(ceil_div(Sk, 32), ceil_div(Sq, 8), bh);
  if (grid.y > 65535) throw std::invalid_argument("v1_unfused: Sq / 8 is more than 65535");
  scores_kernel<<<grid, dim3(32, 8), 0, stream>>>(q, k, s, Sq, Sk, D, scale);
  WB_CHECK_LAUNCH();
  if (causal) {
    const size_t n = static_cast<size_t>(bh) * Sq * Sk;
    const size_t blocks = (n + kElemThreads - 1) / kElemThreads;
    mask_kernel<<<static_cast<unsigned>(blocks < 65536 * 16 ? blocks : 65536 * 16), kElemThreads, 0, stream>>>(s, Sq,
                                                                                                               Sk, n);
    WB_CHECK_LAUNCH();
  }
  softmax_kernel<<<static_cast<unsigned>(bh) * Sq, kRowThreads, 0, stream>>>(s, lse, Sk);
  WB_CHECK_LAUNCH();
}

}  // namespace

void pv_f32(const float* p, const float* v, float* o, int bh, int Sq, int Sk, int D, cudaStream_t stream) {
  pv_kernel<<<dim3(ceil_div(Sq, 8), bh), dim3(32, 8), 0, stream>>>(p, v, o, Sq, Sk, D);
  WB_CHECK_LAUNCH();
}

void v1_probs_f32(const float* q, const float* k, float* p, int B, int H, int Sq, int Sk, int D, float scale,
                  bool causal, cudaStream_t stream) {
  check_args("v1_unfused", B, H, Sq, Sk, D);
  probs_into(q, k, p, nullptr, B, H, Sq, Sk, D, scale, causal, stream);
}

void v1_attention_f32(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H, int Sq,
                      int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  check_args("v1_unfused", B, H, Sq, Sk, D);
  if (scratch == nullptr) throw std::invalid_argument("v1_unfused needs its scores buffer (variants.cu declares it)");
  float* s = static_cast<float*>(scratch);
  probs_into(q, k, s, lse, B, H, Sq, Sk, D, scale, causal, stream);
  pv_f32(s, v, o, B * H, Sq, Sk, D, stream);
}

}  // namespace ch08::solution
