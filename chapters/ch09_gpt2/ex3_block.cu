// Exercise 3 — one transformer block's forward, wired from the model's ops (host code).
//
// Goal: x_out = x + attn(LN_1(x));  x_out = x_out + mlp(LN_2(x_out))  for T tokens, by
// calling the ops of models/gpt2/gpu/ops.h in the right order with the right buffers and
// shapes. The model calls your function once per layer, for the prompt (T tokens) and for
// every decoded token (T = 1). Every op you call runs the kernel chosen for it (yours from
// exercises 1 and 2, chapter 6's LayerNorm ...), so a wrong wiring shows as wrong logits:
// `build/ch09/bin/gpt2 ... --use=block:student --check` names the first op that diverges.
//
// The residual stream arrives as a PAIR: x = b.resid + b.branch (the add is fused into the
// LayerNorm that follows it, chapter 6). The eight calls, with C channels:
//   1. ops.residual_layernorm({"ln_1", l}, resid, branch, ln_1 gamma/beta, h = tmp, y = ln, T)
//   2. ops.linear({"attn_qkv", l}, ln, attn_w, attn_b, qkv, T, N = 3C, K = C, Bias)
//   3. ops.kv_append({"kv_append", l}, qkv, T)           the new keys and values into the cache
//   4. ops.attention({"attention", l}, qkv, att, T)      (T, C)
//   5. ops.linear({"attn_proj", l}, att, ..., branch, T, C, C, Bias)
//   6. ops.residual_layernorm({"ln_2", l}, tmp, branch, ..., h = resid, y = ln, T)
//   7. ops.linear({"mlp_fc", l}, ln, ..., fc, T, 4C, C, BiasGelu)
//   8. ops.linear({"mlp_proj", l}, fc, ..., branch, T, C, 4C, Bias)
// and the block's output is left as resid + branch, for the next block's step 1.
//
// What the tests check (gpt2_gpu.StudentComposition, part of `ctest --preset ch09`):
//   * the whole model with every op yours, BF16, on a small random GPT-2: the last position's
//     logits within a relative L2 error of 5e-2 of the float64 CPU forward. A wiring mistake
//     gives errors of order 1; --check names the first op that diverges.
//   * your function runs for the prompt (T tokens), for every decoded token (T = 1), and
//     inside the captured decode graph: only op calls, no synchronize, no allocation, or the
//     capture fails.
//   * a replayed decode step must equal the eager one bit for bit (exercise 4's test): the
//     same calls with the same buffers every time.
//   * both tests report not_implemented while an op they run is still a stub (exercises 1
//     to 4, and chapters 6 and 7's).
//
// Check: build/ch09/bin/gpt2 --weights=tiny.safetensors --tokens=1,2,3 --use=block:student --check
// Guide: docs/ch09-transformer.md, section "Exercise 3".
#include "runtime/launch.cuh"
#include "ops.h"

namespace ch09::student {

void block_forward(gpt2::Ops& ops, int l, const gpt2::BlockWeights& w, const gpt2::BlockBuffers& b, int T, int C) {
  WB_NOT_IMPLEMENTED("chapters/ch09_gpt2/ex3_block.cu");  // delete this line when you start

  // TODO: the attention half: ln_1 (the fused residual add), attn_qkv, kv_append, attention,
  //       attn_proj. Shapes in comments help: qkv is (T, 3C), att (T, C).
  ops.residual_layernorm({"ln_1", l}, b.resid, b.branch, w.ln_1_w, w.ln_1_b, b.tmp, b.ln, T);
  // TODO: the MLP half: ln_2, mlp_fc (the GELU epilogue), mlp_proj.
  (void)C;
}

}  // namespace ch09::student
