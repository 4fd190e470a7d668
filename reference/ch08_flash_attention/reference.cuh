// Chapter 8 references ("variant 0"): cuDNN's fused attention through the backend graph API
// (cudnn_sdpa.cu), and the unfused cuBLAS pipeline (cublas_attention.cuh, registered in
// cublas_unfused.cu).
#pragma once
#include <string>

#include "ch08.cuh"
#include "runtime/launch.cuh"

namespace ch08::reference {

// cudnn_sdpa.cu: attention forward in BF16 as one cuDNN graph (matmul, scale, causal mask,
// softmax with its statistics, matmul), built and planned once per shape. Throws
// wb::NoEngine, with what cuDNN said, where no engine takes the graph: the harness reports a
// skip with that reason.
AttentionBf16Fn cudnn_attention_bf16;

// Builds (once) the plan for one shape, so that a timed call only executes.
void cudnn_prepare(int B, int H, int Sq, int Sk, int D, bool causal);

// "cuDNN 9.14.0 (runtime), built against 9.19.0".
std::string cudnn_version_text();

}  // namespace ch08::reference
