// Exercise 4 — a CUDA graph: capture once, replay, update.
//
// Goal: a chain of `steps` small kernels, y = x w[0] + c, then y = y w[s] + c for s = 1 ...
// steps - 1, ONE LAUNCH PER STEP (the chain stands for any sequence of many small kernels:
// fusing them is not the exercise). Each launch costs the host a few microseconds, more than
// a small kernel runs: launched one by one, the GPU waits for the host. A graph is the whole
// chain submitted at once:
//   first call:  capture the launches    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal)
//                                        ... the kernels on `stream` ...
//                                        cudaStreamEndCapture(stream, &graph)
//                instantiate it          cudaGraphInstantiate(&exec, graph, 0)
//   every call:  replay it               cudaGraphLaunch(exec, stream)
//   next calls:  the arguments may differ (pointers, n, c): capture again (cheap), then
//                cudaGraphExecUpdate(exec, graph, &info); instantiate again only when the
//                update is refused (a different number of steps changes the graph's shape).
// Keep exec between calls (a static); destroy each captured graph once it is used.
//
// What the tests check, and the outcome code a failure gets:
//   * y within the FP32 error of `steps` multiply-adds [wrong]; every element written
//     [unwritten]; n from 1 to 2^20 + 1, steps from 1 to 100.
//   * shapes that differ only in c, one after the other, and a change of n: a graph
//     replayed without being updated computes with the old c or the old pointers [wrong].
//   * the graph launched on `stream`: the second call holds the legacy default stream, and
//     work that waits for it finishes late [outside_stream]. (No capture check here: your
//     launcher captures a graph itself.)
//   * a second call with new inputs [cached].
//
// Test:  cmake --preset ch11 && ctest --preset ch11 -R ex4_graph
// Bench: build/ch11/bin/ch11_overlap   (eager launches vs a replay, an update vs a replay)
// Guide: docs/ch11-streams.md, section "Exercise 4".
#include "ch11.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace ch11 {
namespace {

__global__ void step_kernel(const float* in, float* out, const float* w, int s, int n, float c) {
  // TODO: out[i] = in[i] * w[s] + c for this thread's i < n.
}

}  // namespace

void student::chain_graph(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t stream) {
  WB_NOT_IMPLEMENTED("chapters/ch11_streams/ex4_graph.cu");  // delete this line when you start

  // Launched one by one, for a start. TODO: capture these launches into a graph, replay it,
  // and update it on the next call.
  const int blocks = (n + 255) / 256;
  for (int s = 0; s < steps; ++s) {
    step_kernel<<<blocks, 256, 0, stream>>>(s == 0 ? x : y, y, w, s, n, c);
    WB_CHECK_LAUNCH();
  }
}

}  // namespace ch11
