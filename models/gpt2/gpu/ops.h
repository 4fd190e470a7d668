// The model's ops as one interface, and the two pieces of host code built on it: a
// transformer block's wiring and the capture of the decode step as a CUDA Graph.
//
// gpt2::Model (model.h) implements Ops: each call runs the kernel chosen for that op (the
// learner's, the solution's or the library's), timed and counted, and in --check mode
// compared with a float64 host computation on the same inputs. A block's forward (exercise
// 3, chapters/ch09_gpt2/ex3_block.cu) is nothing but the right calls in the right order.
//
// Activations are device pointers to rows of the model's dtype (BF16 or FP32), row-major:
// a (T, C) tensor holds T tokens of C channels. Weights are [out, in] (models/gpt2).
#pragma once
#include <cuda_runtime.h>

#include <functional>

#include "capture.h"
#include "ch09.cuh"

namespace gpt2 {

// Which op this call is, for the per-op table and the --check messages ("layer 3 attn_proj").
struct OpTag {
  const char* name;  // "ln_1", "attn_qkv", "kv_append", "attention", "attn_proj", "ln_2", "mlp_fc", "mlp_proj"
  int layer;         // -1 outside the blocks (embedding, ln_f, lm_head, argmax)
};

class Ops {
 public:
  virtual ~Ops() = default;
  // h = x + r, written to h (the new residual stream), and y = LayerNorm(h) · gamma + beta.
  // x, r, h, y: (T, C); gamma, beta: (C). Chapter 6's residual + LayerNorm.
  virtual void residual_layernorm(OpTag tag, const void* x, const void* r, const void* gamma, const void* beta, void* h,
                                  void* y, int T) = 0;
  // y (T, N) = epilogue(x (T, K) · W (N, K)ᵀ + b (N)): the GEMM of exercise 1 for T > 1,
  // the GEMV of exercise 2 for T = 1.
  virtual void linear(OpTag tag, const void* x, const void* w, const void* b, void* y, int T, int N, int K,
                      ch09::Epilogue epi) = 0;
  // The keys and values of T new tokens, from qkv (T, 3C) = [q | k | v], into this layer's
  // KV cache at positions pos .. pos + T - 1, where pos (the tokens already cached) is read
  // from device memory: the same launch serves every decode step of a CUDA Graph.
  virtual void kv_append(OpTag tag, const void* qkv, int T) = 0;
  // att (T, C): causal multi-head attention of the T queries in qkv over this layer's cache
  // (query t, at position pos + t, sees keys 0 .. pos + t).
  virtual void attention(OpTag tag, const void* qkv, void* att, int T) = 0;
};

// One block's weights on the device, [out, in] matrices (models/gpt2/weights.h).
struct BlockWeights {
  const void *ln_1_w, *ln_1_b;            // (C)
  const void *attn_w, *attn_b;            // (3C, C), (3C)
  const void *attn_proj_w, *attn_proj_b;  // (C, C), (C)
  const void *ln_2_w, *ln_2_b;            // (C)
  const void *fc_w, *fc_b;                // (4C, C), (4C)
  const void *fc_proj_w, *fc_proj_b;      // (C, 4C), (C)
};

// The activations a block works in. The residual stream arrives as a pair (resid, branch)
// whose SUM is the block's input x: the add is left to the next LayerNorm, which fuses it
// (chapter 6). The block leaves its output the same way: x + mlp(...) = resid + branch.
struct BlockBuffers {
  void* resid;   // (T, C) in: the residual before the last branch's add; out: x + attn branch
  void* branch;  // (T, C) in: the last branch's output; out: the MLP's output
  void* tmp;     // (T, C) the residual between the two halves: x = resid + branch
  void* ln;      // (T, C) a LayerNorm's output
  void* qkv;     // (T, 3C)
  void* att;     // (T, C) attention's output, heads side by side
  void* fc;      // (T, 4C) the MLP's hidden layer
};

// x_out = x + attn(LN_1(x)); x_out += mlp(LN_2(x_out)) for T tokens at layer `layer`.
using BlockFn = void(Ops& ops, int layer, const BlockWeights& w, const BlockBuffers& b, int T, int C);

// (CaptureFn, the decode step's capture: capture.h.)

namespace solution {
BlockFn block_forward;    // solutions/ch09_gpt2/block_and_graph.cu
CaptureFn capture_graph;  // solutions/ch09_gpt2/block_and_graph.cu
// capture_graph's last part: ends the capture begun on `stream` and returns its graph
// instantiated (the cudaGraph_t destroyed); throws wb::CudaError when either fails.
cudaGraphExec_t end_capture_and_instantiate(cudaStream_t stream);
}  // namespace solution

}  // namespace gpt2

namespace ch09::student {
gpt2::BlockFn block_forward;    // chapters/ch09_gpt2/ex3_block.cu
gpt2::CaptureFn capture_graph;  // chapters/ch09_gpt2/ex4_decode_graph.cu
}  // namespace ch09::student
