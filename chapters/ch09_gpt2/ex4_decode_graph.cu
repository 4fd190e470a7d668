// Exercise 4 — the decode step as a CUDA Graph (host code).
//
// Goal: capture everything one decode step launches (about a dozen kernels per layer) into
// a CUDA Graph once, and replay it for every token. At batch 1 a GPT-2 124M step is ~150
// small kernels of a few microseconds each; launching them one by one from the host costs
// about as much as running them. A graph is launched with ONE call.
//
// What makes a step replayable (the model already does this; see docs/ch09-transformer.md):
//   * static buffers: every pointer captured is the same for every step;
//   * the position passed through device memory: the kernels read pos from a device int
//     that the step itself advances, so the graph does not bake in position 17;
//   * no allocation, no synchronization, no host work inside the step.
//
// What you write: begin capturing `stream` (cudaStreamBeginCapture, mode
// cudaStreamCaptureModeThreadLocal), call step(stream) — its launches are recorded, not
// run — end the capture (cudaStreamEndCapture gives a cudaGraph_t), instantiate it
// (cudaGraphInstantiate), destroy the cudaGraph_t (the executable graph keeps what it
// needs) and return the cudaGraphExec_t. If step() throws, end the capture before you
// rethrow, or the stream stays in capture mode and every later call on it fails.
//
// What the tests check (gpt2_gpu.StudentComposition.DecodeGraphReplayEqualsEager):
//   * the graph you return, replayed, writes logits equal bit for bit to the same decode
//     step run eagerly.
//   * it is a graph, not a run: step(stream) must be recorded under capture, not executed;
//     a null cudaGraphExec_t is reported as an error.
//   * not_implemented while an op the step runs is still a stub (exercises 1 to 3, and
//     chapters 6 and 7's).
//
// Check: build/ch09/bin/gpt2 --weights=tiny.safetensors --prompt-len=8 --use=graph:student --check
//        (replay compared with the eager step, bit for bit)
// Guide: docs/ch09-transformer.md, section "Exercise 4".
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "ops.h"

namespace ch09::student {

cudaGraphExec_t capture_graph(cudaStream_t stream, const std::function<void(cudaStream_t)>& step) {
  WB_NOT_IMPLEMENTED("chapters/ch09_gpt2/ex4_decode_graph.cu");  // delete this line when you start

  // TODO: CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  // TODO: step(stream), and if it throws: cudaStreamEndCapture, destroy what it gave, rethrow
  // TODO: cudaGraph_t graph; CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  // TODO: cudaGraphExec_t exec; cudaGraphInstantiate(&exec, graph, 0); cudaGraphDestroy(graph);
  step(stream);  // TODO: this runs the step now instead of recording it
  return nullptr;
}

}  // namespace ch09::student
