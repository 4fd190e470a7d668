// Exercise 6 — attention over a ragged batch: sequences of different lengths packed back to
// back, no padding computed.
//
// Goal: exercise 4 (or 3) on the layout a serving engine batches prefills in (ch08.cuh,
// "Ragged batches"): sequence b is tokens cu_seqlens[b] .. cu_seqlens[b + 1] - 1, q[t][hq][d]
// token-major (a row of one head is Hq * D elements after the previous one; of k and v,
// Hkv * D), lse[hq][t]. Each sequence attends to itself only, causal or not.
//   * grid (ceil(max_seqlen / Br), B * Hq): blockIdx.y picks (b, hq); the block reads its
//     sequence's start and length from cu_seqlens and returns at once when its tile of rows
//     starts past the end (those are the only wasted blocks: a padded batch would compute
//     max_seqlen rows for every sequence instead).
//   * the kv head of query head hq is hq / (Hq / Hkv).
//   * a tile of keys that runs past the end of the sequence must not load the next
//     sequence's tokens (they are real, finite data: nothing would fault, the result would
//     just be wrong).
//
// What the tests check, and the outcome code a failure gets:
//   * o (BF16) and lse within bounds from FP32 sums and the BF16 roundings of p and o
//     [wrong]; a token attends to its own sequence only; no NaN [nan].
//   * every element of o and lse written, no row of any sequence skipped [unwritten];
//     nothing outside them [oob_write].
//   * batches of lengths 1, 63, 64, 65 and 8191 together, and mixes up to 1000, with
//     32/8, 12/12, 4/1 heads, D = 32, 64, 96, 128, causal or not, and random batches; from
//     sm_80 [skipped]; then the large case, 4,097 sequences of 4,096 tokens (16.8 M tokens:
//     offsets past 2^31).
//   * the same bits on a repeated run [nondeterministic]: a fixed order over the key tiles,
//     so a difference is a race.
//   * all work on `stream` [outside_stream]; a second call on the same buffers with new
//     inputs [cached], in which q, k, v and cu_seqlens end at unmapped memory [oob_read].
//
// Test:  ctest --preset ch08 -R ex6_ragged_attention
// Bench: build/ch08/bin/ch08_bench --op=attention_ragged
// Guide: docs/ch08-flash-attention.md, section "Exercise 6".
#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch08 {
namespace {

constexpr int kWarps = 4;
constexpr int kBr = 16 * kWarps;  // query rows per block
constexpr int kBc = 64;           // keys per tile
static_assert(kBc % 16 == 0, "keys per tile: whole k16 steps of P V");

// blockIdx.x: a tile of kBr rows of one sequence; blockIdx.y: b * Hq + hq.
__global__ void ragged_kernel(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const int* cu_seqlens,
                              int T, int Hq, int Hkv, int D, float scale, bool causal) {
  // TODO: start = cu_seqlens[b], len = cu_seqlens[b + 1] - start; return if blockIdx.x * kBr >= len.
  // TODO: exercise 4's loop with Sq = Sk = len, row strides Hq * D (q, o) and Hkv * D (k, v),
  //       rows >= len loaded as zeros, lse at lse[hq * T + start + i].
}

}  // namespace

void student::ragged_attention(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, const int* cu_seqlens,
                               int B, int T, int Hq, int Hkv, int max_seqlen, int D, float scale, bool causal,
                               void* scratch, cudaStream_t stream) {
  require_groups("ex6_ragged_attention", Hq, Hkv);  // keep this first: bad groups are refused
  WB_NOT_IMPLEMENTED("chapters/ch08_flash_attention/ex6_ragged_attention.cu");  // delete this line when you start

  (void)scratch;
  const dim3 grid((max_seqlen + kBr - 1) / kBr, B * Hq);  // tiles of the longest sequence x (sequence, head)
  ragged_kernel<<<grid, kWarps * 32, 0, stream>>>(q, k, v, o, lse, cu_seqlens, T, Hq, Hkv, D, scale, causal);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
