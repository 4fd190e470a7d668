// Fixture submission "slow", chapter 9, exercise 3: the block's eight calls, in the order of the
// exercise (host code).
#include "ch09.cuh"
#include "ops.h"

namespace ch09::student {

void block_forward(gpt2::Ops& ops, int l, const gpt2::BlockWeights& w, const gpt2::BlockBuffers& b, int T, int C) {
  // Attention half: tmp = resid + branch = x, ln = LN_1(x); qkv (T, 3C); att (T, C); branch (T, C).
  ops.residual_layernorm({"ln_1", l}, b.resid, b.branch, w.ln_1_w, w.ln_1_b, b.tmp, b.ln, T);
  ops.linear({"attn_qkv", l}, b.ln, w.attn_w, w.attn_b, b.qkv, T, 3 * C, C, Epilogue::Bias);
  ops.kv_append({"kv_append", l}, b.qkv, T);
  ops.attention({"attention", l}, b.qkv, b.att, T);
  ops.linear({"attn_proj", l}, b.att, w.attn_proj_w, w.attn_proj_b, b.branch, T, C, C, Epilogue::Bias);
  // MLP half: resid = tmp + branch, ln = LN_2(resid); fc (T, 4C); branch (T, C). Out: resid + branch.
  ops.residual_layernorm({"ln_2", l}, b.tmp, b.branch, w.ln_2_w, w.ln_2_b, b.resid, b.ln, T);
  ops.linear({"mlp_fc", l}, b.ln, w.fc_w, w.fc_b, b.fc, T, 4 * C, C, Epilogue::BiasGelu);
  ops.linear({"mlp_proj", l}, b.fc, w.fc_proj_w, w.fc_proj_b, b.branch, T, C, 4 * C, Epilogue::Bias);
}

}  // namespace ch09::student
