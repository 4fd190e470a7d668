// Exercise 1 — unfused attention in FP32: the baseline that writes the whole score matrix.
//
// Goal: O = softmax(scale * Q K^T, masked) V and lse, as three kernels that talk through
// `scratch` (B * H * Sq * Sk floats, given to you: see variants.cu):
//   1. scores:  scratch[bh][i][j] = scale * sum_d q[bh][i][d] * k[bh][j][d], and -inf where
//               the causal mask hides key j from query i (j > i + Sk - Sq);
//   2. softmax: each row of scratch in place: m = max, l = sum exp(s - m), p = exp(s - m) / l;
//               lse[bh][i] = m + log(l); a row of only -inf gives p = 0 and lse = -inf;
//   3. PV:      o[bh][i][d] = sum_j p[bh][i][j] * v[bh][j][d].
// The rules (shapes, the mask when Sq != Sk, rows that see no key) are in ch08.cuh. Count
// the bytes of the scores buffer at Sq = Sk = 4096, B = 4, H = 16: that is why the later
// exercises never write it.
//
// What the tests check, and the outcome code a failure gets:
//   * o and lse within bounds from FP32 rounding (they grow with sqrt(D) and sqrt(Sk)), and
//     their largest errors at most 2x those of the library's unfused pipeline on the same
//     inputs, plus a floor [wrong]. A row that sees no key: o = 0, lse = -inf; no NaN [nan].
//   * every element of o and lse written [unwritten], nothing outside them [oob_write].
//   * Sq, Sk = 1, 2, 17, 63 ... 1000, 4096, square and not; D = 32, 64, 96, 128; causal or
//     not; B * H up to 128; q ~ normal(0, 4) and keys that rise along the sequence; random
//     shapes. Then the large cases (offsets past 2^31): 128 heads of 4097 x 4097 scores, and 64
//     heads of 1,310,721 keys with one query each.
//   * the same bits on a repeated run [nondeterministic]: each row's max and sums in a fixed
//     order give them, so a difference is a race.
//   * all three kernels on `stream` [outside_stream]; a second call on the same buffers with
//     new inputs [cached], in which q, k and v end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch08 -R ex1_unfused_attention
// Bench: build/ch08/bin/ch08_bench --op=attention --dtype=f32
// Guide: docs/ch08-flash-attention.md, section "Exercise 1".
#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch08 {
namespace {

constexpr int kThreads = 256;

// One thread per score: blockIdx.z is bh, y picks the query row, x the key.
__global__ void scores_kernel(const float* q, const float* k, float* s, int Sq, int Sk, int D, float scale,
                              bool causal) {
  // TODO: i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  //       return when i >= Sq or j >= Sk.
  // TODO: bh = blockIdx.z; the rows q + (bh * Sq + i) * D and k + (bh * Sk + j) * D
  //       (size_t arithmetic: B * H * Sq * Sk passes 2^31 at the benchmark's shapes).
  // TODO: dot product over d, times scale; -INFINITY when causal && j > i + Sk - Sq.
  // TODO: s[(bh * Sq + i) * Sk + j] = the score.
}

// One block per row of scores (B * H * Sq rows of Sk).
__global__ void softmax_kernel(float* s, float* lse, int Sk) {
  // TODO: the row starts at s + blockIdx.x * Sk (size_t).
  // TODO: block max, then block sum of expf(x - max) (strided loops and a block reduction,
  //       chapter 3), then write expf(x - max) / sum over the row.
  // TODO: max == -INFINITY (every key hidden): write 0s, and lse = -INFINITY.
  // TODO: thread 0: lse[blockIdx.x] = max + logf(sum).
}

// One thread per output element o[bh][i][d].
__global__ void pv_kernel(const float* p, const float* v, float* o, int Sq, int Sk, int D) {
  // TODO: o[bh][i][d] = sum_j p[bh][i][j] * v[bh][j][d].
}

}  // namespace

void student::unfused_attention(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H,
                                int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch08_flash_attention/ex1_unfused_attention.cu");  // delete this line when you start

  float* s = static_cast<float*>(scratch);  // B * H * Sq * Sk floats
  const int bh = B * H;
  const dim3 block(32, 8);
  const dim3 grid(1, 1, bh);  // TODO: enough blocks for Sk keys in x and Sq rows in y (round up)
  scores_kernel<<<grid, block, 0, stream>>>(q, k, s, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
  softmax_kernel<<<1, kThreads, 0, stream>>>(s, lse, Sk);  // TODO: one block per row
  WB_CHECK_LAUNCH();
  pv_kernel<<<1, kThreads, 0, stream>>>(s, v, o, Sq, Sk, D);  // TODO: one thread per element of o
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
