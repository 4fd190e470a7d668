// v7 — a floor from the warps' votes: each block keeps every logit above a cheap floor, and the
// last block of the row does the one exact select.
//
// Over v5: at 64 x 128,256 (k 50) v5 reads the logits at about a fifth of the copy bandwidth.
// Its 1,024 blocks each load 32 logits a thread and then, with no load in flight, run a serial
// select: the (m, s) pair through a block-wide merge, every logit turned into its ordered bits,
// the range of the 256 thread maxima, a 2,048-bin radix pass over them, the ~55 survivors
// gathered and ranked, the k keys published. About 1,900 instructions a warp for 1,024
// logits, with four blocks an SM: the SM spends most of the block's life selecting, and the
// DRAM waits. v7 moves the exact work to the one block per row that has to do it anyway (the
// last) and leaves the other blocks a floor that costs a few warp votes:
//
//   1. Load, as v5: a block of 256 threads holds 256 x 32 logits in registers (float4
//      streaming loads, all in flight at once). Each thread's maximum, a float max per logit.
//   2. A floor per warp: the j-th largest of the warp's 32 thread maxima, j = ceil(k / 8), by
//      j rounds of a warp max-reduction (redux) and a ballot of the lanes that hold it. Eight
//      warps x j maxima >= k logits reach the lowest of the eight warp floors, so the block's
//      k largest do. The block's floor is the highest warp floor that k of its maxima reach
//      (one ballot per warp floor, the counts added in shared memory, one more barrier): in a
//      simulation of rows drawn from normal(0, 2), about 60 logits of 8,192 reach it, against
//      about 55 for v5's floor and about 100 for the lowest warp floor (measured on an H200,
//      the lowest warp floor alone was 0.8 to 3 us slower at every benchmark shape).
//   3. The (m, s) pair per warp, relative to the warp's maximum (the first redux of 2 gave
//      it): one exp per logit on the MUFU unit, a shuffle sum, no rescaling. Thread 0 merges
//      the eight warps' pairs when it publishes.
//   4. Survivors: a thread whose maximum reaches the floor appends its logits that reach it
//      (their keys) straight to the block's slice of the workspace (a shared counter gives
//      the slot). No ranking here: the block publishes the count, its floor and the keys.
//      A slice holds 8,192 / splits keys (512 at 16 blocks a row); a block with more survivors
//      (thousands of equal logits) runs v5's exact select over its chunk read again and
//      publishes its k best instead: slow, correct, rare.
//   5. Publish: thread 0 writes the header and the block's (m, s), then ONE fence and the
//      row's counter (v5: every thread fences before the barrier; the barrier already orders
//      the block's writes before thread 0's fence, as in a grid-wide barrier).
//   6. The last block of the row (v5's counter): the row's floor is the highest block floor
//      (at least k logits of the row reach each one), the published keys that reach it
//      (a few hundred to a thousand) are gathered into shared memory in one pass over L2,
//      and v5's radix select takes their top k, ranked. If more than kCandCap reach it, the
//      same select runs over the published keys in L2 instead.
//
//   per block:  256 threads x 32 logits (8,192) in registers, read once
//   per row:    splits = ceil(V / 8,192) blocks (16 at V = 128,256; 32 at 262,144), at most 64
//   B = 64, V = 128,256:  1,024 blocks of ~8,016 logits
//
// The work per block is a load, a max and (softmax forms) an exp per logit, j + 8 warp votes,
// three barriers, and the survivors' keys written (Nsight Compute, 256 x 128,256: about 920
// instructions a warp on average, the last blocks' selects included; v5: about 1,900).
//
// What it does not serve goes to v5 (same arguments): rows that do not allow float4 loads
// (V % 4 != 0 or an unaligned x) and rows longer than 64 x 8,192 = 524,288 logits (a block's
// slice of the workspace would fall below 128 keys).
//
// From radix_select.cuh: the chunk's load, the keys in shared memory, the select and its
// ranking, v5's exact path over a chunk in memory, the result's write. From split_common.cuh:
// the workspace, the row's counter and its reset, the launch with the probabilities pass.
// The block's work, the last block's select and the launch live in warp_floor.cuh, which v8's
// form for large batches shares.
//
// Run: build/ch07/bin/ch07_bench --op=softmax_topk/f32 --impl=v5_radix_select,v7_warp_floor
#include <cstdint>

#include "ladder.cuh"
#include "runtime/errors.cuh"
#include "warp_floor.cuh"

namespace ch07::solution {
namespace {

// grid (splits, B), 256 threads: block (s, b) takes chunk s of row b.
__global__ void __launch_bounds__(kThreads, kMinBlocks) warp_floor_kernel(Job job) {
  __shared__ BlockShared bs;
  const int s = blockIdx.x, b = blockIdx.y;
  float v[kSlots];
  load_chunk<kSlots, true>(job.row(b), job.begin(s), job.end(s), v);
  chunk_step(v, b, s, job, bs);
}

// --- the launch ----------------------------------------------------------------------------

// Launches v7 for the shapes it serves; false (nothing launched) for the others.
bool launch(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k, bool probabilities,
            void* workspace, cudaStream_t stream) {
  return launch_blocks(warp_floor_kernel, kMaxSplits7, x, probs, values, indices, B, V, k, probabilities, workspace,
                       stream);
}

}  // namespace

void topk_warp_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                     cudaStream_t stream) {
  if (!launch(x, nullptr, values, indices, B, V, k, false, workspace, stream)) {
    topk_radix(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_warp_floor(const float* x, float* values, int32_t* indices, int B, int V, int k, void* workspace,
                             cudaStream_t stream) {
  if (!launch(x, nullptr, values, indices, B, V, k, true, workspace, stream)) {
    softmax_topk_radix(x, values, indices, B, V, k, workspace, stream);
  }
}

void softmax_topk_probs_warp_floor(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                   void* workspace, cudaStream_t stream) {
  if (!launch(x, probs, values, indices, B, V, k, true, workspace, stream)) {
    softmax_topk_probs_radix(x, probs, values, indices, B, V, k, workspace, stream);
  }
}

}  // namespace ch07::solution
