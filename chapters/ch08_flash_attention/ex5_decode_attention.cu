// Exercise 5 — decode attention against a KV cache, split over the keys (flash-decoding).
//
// Goal: one new token per sequence attends to everything its sequence has seen (ch08.cuh,
// "Decode attention": q[b][hq][d], the cache k_cache[b][hkv][j][d] of which the first
// seq_lens[b] entries count, the new token's own k and v already at j = seq_lens[b] - 1).
// At batch 1 there are only Hkv groups of work: one CTA each would leave almost every SM
// idle while the cache, the only big thing here, streams in. So:
//   kernel 1  grid (chunks, B * Hkv): a CTA takes one chunk of keys of one kv head and ALL
//             G = Hq / Hkv query heads that share it (K and V loaded once for G heads); the
//             online softmax of exercise 3 over its keys; writes per query head a partial
//             o_c (already divided by its own sum) and lse_c, FP32, into `scratch`.
//             A chunk past seq_lens[b] is empty: it writes o_c = 0, lse_c = -inf.
//   kernel 2  grid (B * Hq): lse = log sum_c exp(lse_c), o = sum_c exp(lse_c - lse) o_c.
// chunks = decode_splits(B, Hkv, L_max) (or fewer): scratch holds that many partials.
// Careful: keys past seq_lens[b] hold stale data; key seq_lens[b] - 1 is the newest and
// counts; a merge that averages the chunks is only right when they hold equal mass.
//
// What the tests check, and the outcome code a failure gets:
//   * o (BF16) and lse within bounds from FP32 sums and BF16 roundings, and at most 2x the
//     errors of the library's decode on the same inputs, plus a floor [wrong]; the newest
//     key (j = seq_lens[b] - 1) is drawn wide, so dropping it fails at every length.
//   * every element of o and lse written [unwritten], nothing outside them [oob_write].
//   * L_max = 1, 17, 4096, 32768, heads 32/8, 32/1, 12/12, D = 64 and 128 (96 and 32 too),
//     batches up to 64 with a length per sequence; from sm_80 [skipped]. After them the
//     large cases, L_max = 32768 at D = 128 with 32/8 and 12/12 heads.
//   * refused, before anything is launched [accepted_bad_args]: Hq = 12 over Hkv = 8 (Hkv
//     must divide Hq: require_groups does it).
//   * the same bits on a repeated run [nondeterministic]: merge the chunks in chunk order
//     (a float atomicAdd of the partial outputs would change the last bits).
//   * all work on `stream` [outside_stream]; a second call, same scratch, new inputs
//     [cached]; the caches end where unmapped memory begins [oob_read].
//
// Test:  ctest --preset ch08 -R ex5_decode_attention
// Bench: build/ch08/bin/ch08_bench --op=attention_decode
// Guide: docs/ch08-flash-attention.md, section "Exercise 5".
#include "ch08.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch08 {
namespace {

constexpr int kThreads = 128;
constexpr int kBc = kDecodeKeysPerTile;  // keys per tile
static_assert(kBc % 32 == 0, "a warp takes kBc / 32 scores of a row per lane");

// grid (chunks, B * Hkv). part_o: (chunks, B * Hq, D) floats; part_lse: (chunks, B * Hq).
__global__ void decode_chunk_kernel(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens,
                                    float* part_o, float* part_lse, int Hkv, int G, int L_max, int D, int chunk,
                                    float scale) {
  // TODO: this CTA's keys: [blockIdx.x * chunk, min(that + chunk, seq_lens[b])), b = blockIdx.y / Hkv.
  // TODO: the G query rows of the group (q heads blockIdx.y * G .. + G - 1) into shared memory.
  // TODO: per tile of kBc keys: scores for the G x kBc pairs, the online softmax per query
  //       head, o = alpha o + p v.
  // TODO: o / l and lse = m + log(l) (or 0 and -inf for an empty chunk) into the partials.
}

// grid (B * Hq): the chunks of one query head merged by their log-sum-exp.
__global__ void decode_merge_kernel(const float* part_o, const float* part_lse, bf16* o, float* lse, int chunks,
                                    int D) {
  // TODO: M = max_c lse_c; lse = M + log(sum_c exp(lse_c - M)); o = sum_c exp(lse_c - lse) o_c.
}

}  // namespace

void student::decode_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache, const int* seq_lens, bf16* o,
                               float* lse, int B, int Hq, int Hkv, int L_max, int D, float scale, void* scratch,
                               cudaStream_t stream) {
  require_groups("ex5_decode_attention", Hq, Hkv);  // keep this first: bad groups are refused
  WB_NOT_IMPLEMENTED("chapters/ch08_flash_attention/ex5_decode_attention.cu");  // delete this line when you start

  const int chunks = decode_splits(B, Hkv, L_max);
  const int chunk = (L_max + chunks - 1) / chunks;  // keys per chunk (a multiple of kBc is kinder to the loop)
  float* part_o = static_cast<float*>(scratch);
  float* part_lse = part_o + static_cast<size_t>(chunks) * B * Hq * D;
  decode_chunk_kernel<<<dim3(chunks, B * Hkv), kThreads, 0, stream>>>(q, k_cache, v_cache, seq_lens, part_o, part_lse,
                                                                      Hkv, Hq / Hkv, L_max, D, chunk, scale);
  WB_CHECK_LAUNCH();
  decode_merge_kernel<<<B * Hq, kThreads, 0, stream>>>(part_o, part_lse, o, lse, chunks, D);
  WB_CHECK_LAUNCH();
}

}  // namespace ch08
