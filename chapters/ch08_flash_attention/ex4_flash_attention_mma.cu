// Exercise 4 — flash attention in BF16 on tensor cores: the FlashAttention-2 structure with
// mma.sync.m16n8k16 (chapter 5), FP32 accumulation.
//
// Goal: exercise 3's algorithm with both products on tensor cores:
//   * a block of 4 warps takes 64 query rows, each warp 16 of them (one m16 tile); the
//     warp's Q fragments are loaded ONCE (ldmatrix) and stay in registers;
//   * tiles of K and V (64 keys) come through shared memory with cp.async, two stages each,
//     so the next tile loads while this one is used;
//   * S = Q K^T with mma.sync (K as the B operand: ldmatrix WITHOUT .trans, since K is stored
//     key by key, which is what the "col" layout of B wants);
//   * the online softmax on the S accumulators: each row lives in the 4 lanes of a quad, so
//     its max is two __shfl_xor_sync steps; exp2 with scale * log2(e) folded into one FMA;
//   * P never leaves registers: the accumulator layout of S (16 x 8 tiles) is exactly the A
//     fragment layout of the second mma once two neighbouring tiles are packed into BF16
//     pairs; V is the B operand through ldmatrix.trans;
//   * one division by l per row at the very end; O written through shared memory in 16-byte
//     pieces; lse = m + log(l).
// Chapter 5's PTX wrappers are included below, in namespace wb::ptx: cp_async_16, cp_async_commit,
// cp_async_wait (harness/device/async_copy.cuh), smem_u32, ldmatrix_x4 (_trans) and mma_16816
// (harness/device/mma.cuh, with the lane maps of mma.sync.m16n8k16 and ldmatrix).
//
// What the tests check, and the outcome code a failure gets:
//   * o (BF16) and lse within bounds from FP32 sums and the BF16 roundings of p and o, and
//     at most 2x the errors of the library's BF16 pipeline (P rounded to BF16 too), plus
//     1e-4 for o [wrong]. A row that sees no key: o = 0, lse = -inf; no NaN [nan].
//   * every element of o and lse written [unwritten], nothing outside them [oob_write].
//   * Sq, Sk = 1, 2, 17, 63 ... 1000, 4096, square and not; D = 32, 64, 96, 128; causal or
//     not; B * H up to 128; q ~ normal(0, 4) and keys that rise along the sequence; random
//     shapes. From sm_80 [skipped below it]; then the large case, 64 heads of 1,310,721
//     keys with one query each, causal (key offsets past 2^31).
//   * the same bits on a repeated run [nondeterministic]: a fixed order over the key tiles,
//     so a difference is a race (a cp.async stage read before its wait and barrier).
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which q, k and v end where unmapped memory begins: a load past
//     the last key faults [oob_read].
//
// Test:  ctest --preset ch08 -R ex4_flash_attention_mma
// Bench: build/ch08/bin/ch08_bench --op=attention --dtype=bf16
// Guide: docs/ch08-flash-attention.md, section "Exercise 4".
#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "device/async_copy.cuh"
#include "device/mma.cuh"

namespace ch08 {
namespace {

constexpr int kWarps = 4;
constexpr int kBr = 16 * kWarps;  // query rows per block
constexpr int kBc = 64;           // keys per tile
static_assert(kBc % 16 == 0, "keys per tile: whole k16 steps of P V");

// blockIdx.x: a tile of kBr query rows; blockIdx.y: bh.
__global__ void flash_mma_kernel(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int Sq, int Sk,
                                 int D, float scale, bool causal) {
  // TODO: cp.async the q tile and the first k and v tiles; wait; ldmatrix the q fragments.
  // TODO: per key tile: wait for k, prefetch the next k, S = Q K^T, mask, online softmax
  //       (quad shuffles), pack P to BF16 A fragments, wait for v, prefetch the next v,
  //       O += P V.
  // TODO: O / l, through shared memory to 16-byte stores; lse.
}

}  // namespace

void student::flash_attention_mma(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, int B, int H,
                                  int Sq, int Sk, int D, float scale, bool causal, void* scratch, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch08_flash_attention/ex4_flash_attention_mma.cu");  // delete this line when you start

  (void)scratch;
  const dim3 grid((Sq + kBr - 1) / kBr, B * H);  // tiles of kBr query rows x heads
  flash_mma_kernel<<<grid, kWarps * 32, 0, stream>>>(q, k, v, o, lse, Sq, Sk, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
