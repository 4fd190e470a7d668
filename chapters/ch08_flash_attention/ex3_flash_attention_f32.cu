// Exercise 3 — flash attention on CUDA cores, FP32.
//
// Goal: the same O and lse as exercise 1, without ever writing a score: a block takes a
// tile of Br query rows, loops over tiles of Bc keys and values staged in shared memory,
// and keeps per row a running max m, a running sum l and a running output o (Br x D):
//   for each key tile:  s = scale * q k^T (Br x Bc), masked
//                       m_new = max(m, rowmax(s)); alpha = exp(m - m_new)
//                       p = exp(s - m_new); l = alpha * l + rowsum(p); o = alpha * o + p v
//   at the end:         o /= l; lse = m + log(l)
// The work and the memory no longer grow with Sq x Sk per head: that matrix exists only a
// tile at a time. With the causal mask, key tiles that lie entirely to the right of the
// block's last row are never loaded: about half of the work disappears.
// Careful with rows whose every score so far is -inf: exp(-inf - (-inf)) is NaN.
//
// What the tests check, and the outcome code a failure gets:
//   * o and lse as in exercise 1: within bounds from FP32 rounding (growing with sqrt(D) and
//     sqrt(Sk)), and at most 2x the library's errors plus a floor [wrong]. A row that sees no
//     key: o = 0, lse = -inf, never NaN [nan].
//   * every element of o and lse written [unwritten], nothing outside them [oob_write].
//   * Sq, Sk = 1, 2, 17, 63 ... 1000, 4096, square and not; D = 32, 64, 96, 128; causal or
//     not; B * H up to 128; q ~ normal(0, 4) and keys that rise along the sequence; random
//     shapes. Then the large cases (offsets past 2^31): 128 heads of 4097 x 4097, and 64 heads of
//     1,310,721 keys with one query each.
//   * the same bits on a repeated run [nondeterministic]: one block owns each query row and
//     walks the key tiles in order, so a difference is a race (a barrier missing around a
//     shared tile).
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which q, k and v end where unmapped memory begins: a load past
//     the last key faults [oob_read].
//
// Test:  ctest --preset ch08 -R ex3_flash_attention_f32
// Bench: build/ch08/bin/ch08_bench --op=attention --dtype=f32
// Guide: docs/ch08-flash-attention.md, section "Exercise 3".
#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch08 {
namespace {

constexpr int kBr = 64;  // query rows per block
constexpr int kBc = 32;  // keys per tile
constexpr int kThreads = 256;
static_assert(kBr * kBc % kThreads == 0, "every thread owns the same number of scores of a tile");

// blockIdx.x: a tile of kBr query rows; blockIdx.y: bh.
__global__ void flash_f32_kernel(const float* q, const float* k, const float* v, float* o, float* lse, int Sq, int Sk,
                                 int D, float scale, bool causal) {
  // TODO: load the block's q tile into shared memory (zeros past Sq and past D).
  // TODO: how many key tiles does this block need? All ceil(Sk / kBc) of them, or with the
  //       mask only up to the one holding key (last row of the block) + Sk - Sq.
  // TODO: per key tile: __syncthreads(); load k (and v) tiles (zeros past Sk);
  //       __syncthreads(); scores, mask (j >= Sk too!), online softmax update, p v.
  // TODO: o / l and lse = m + log(l) for the rows < Sq; rows that saw no key: 0 and -inf.
}

}  // namespace

void student::flash_attention_f32(const float* q, const float* k, const float* v, float* o, float* lse, int B, int H,
                                  int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch08_flash_attention/ex3_flash_attention_f32.cu");  // delete this line when you start

  (void)scratch;                                 // not needed: nothing is written but o and lse
  const dim3 grid((Sq + kBr - 1) / kBr, B * H);  // tiles of kBr query rows x heads
  flash_f32_kernel<<<grid, kThreads, 0, stream>>>(q, k, v, o, lse, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
