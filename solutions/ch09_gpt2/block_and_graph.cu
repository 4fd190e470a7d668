// The solution of exercises 3 and 4: a transformer block's wiring, and the capture of the
// decode step as a CUDA Graph.
#include "runtime/errors.cuh"
#include "ops.h"

namespace gpt2::solution {

void block_forward(Ops& ops, int l, const BlockWeights& w, const BlockBuffers& b, int T, int C) {
  using ch09::Epilogue;
  // Attention half. tmp (T, C) = resid + branch = x;  ln (T, C) = LN_1(x)
  ops.residual_layernorm({"ln_1", l}, b.resid, b.branch, w.ln_1_w, w.ln_1_b, b.tmp, b.ln, T);
  // qkv (T, 3C) = ln · attn_wᵀ + attn_b
  ops.linear({"attn_qkv", l}, b.ln, w.attn_w, w.attn_b, b.qkv, T, 3 * C, C, Epilogue::Bias);
  // this layer's cache gets the T new keys and values; att (T, C) = causal attention
  ops.kv_append({"kv_append", l}, b.qkv, T);
  ops.attention({"attention", l}, b.qkv, b.att, T);
  // branch (T, C) = att · proj_wᵀ + proj_b
  ops.linear({"attn_proj", l}, b.att, w.attn_proj_w, w.attn_proj_b, b.branch, T, C, C, Epilogue::Bias);

  // MLP half. resid (T, C) = tmp + branch;  ln = LN_2(resid)
  ops.residual_layernorm({"ln_2", l}, b.tmp, b.branch, w.ln_2_w, w.ln_2_b, b.resid, b.ln, T);
  // fc (T, 4C) = gelu_tanh(ln · fc_wᵀ + fc_b): the fused epilogue of exercise 1
  ops.linear({"mlp_fc", l}, b.ln, w.fc_w, w.fc_b, b.fc, T, 4 * C, C, Epilogue::BiasGelu);
  // branch (T, C) = fc · fc_proj_wᵀ + fc_proj_b; the block's output is resid + branch
  ops.linear({"mlp_proj", l}, b.fc, w.fc_proj_w, w.fc_proj_b, b.branch, T, C, 4 * C, Epilogue::Bias);
}

cudaGraphExec_t capture_graph(cudaStream_t stream, const std::function<void(cudaStream_t)>& step) {
  // ThreadLocal: a call that is illegal during capture (a cudaMalloc, a synchronize) made by
  // this thread fails the capture instead of silently running outside the graph.
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    step(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);  // leaves capture mode; the partial graph is dropped
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  return end_capture_and_instantiate(stream);
}

cudaGraphExec_t end_capture_and_instantiate(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);  // the executable graph keeps what it needs
  CUDA_CHECK(err);
  return exec;
}

}  // namespace gpt2::solution
