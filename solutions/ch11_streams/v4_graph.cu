// v4 — exercise 4: the chain of small kernels as one CUDA graph, updated between calls.
//
// What changed over the reference (one launch per step, every call): the launches are
// captured from the given stream into a graph; the graph is instantiated once; each call
// replays it with one cudaGraphLaunch. Later calls capture again (recording launches is
// cheap: nothing runs) and hand the new graph to cudaGraphExecUpdate, which copies the new
// arguments (pointers, grid, c) into the instantiated graph; only a refused update (another
// number of steps) instantiates again, the costly part.
// Why it is faster: launched one by one, each step costs the host a few microseconds, more
// than a 4096-element kernel runs, and the GPU waits between steps; a graph is submitted once
// and its kernels follow each other on the GPU without the host.
// When it is not: a chain of a few long kernels (launch cost hidden behind them), or work
// whose shape changes every call (every update refused: instantiation each time).
//
// Run:  ctest --preset ch11-solution -R v4_graph
// Launch cost:  build/ch11/bin/ch11_overlap   (targets: replay >= 3x eager; update <= 1.10x replay)
#include <algorithm>

#include "ladder.cuh"
#include "runtime/errors.cuh"

namespace ch11::solution {
namespace {

__global__ void step_kernel(const float* in, float* out, const float* w, int s, int n, float c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * w[s] + c;
}

// The instantiated chain, kept between calls (one chain at a time).
struct ChainExec {
  cudaGraphExec_t exec = nullptr;
};

cudaGraph_t capture_chain(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t stream) {
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int s = 0; s < steps; ++s) launch_step(s == 0 ? x : y, y, w, s, n, c, stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  return graph;
}

}  // namespace

void launch_step(const float* in, float* out, const float* w, int s, int n, float c, cudaStream_t stream) {
  if (n <= 0) return;
  step_kernel<<<(n + 255) / 256, 256, 0, stream>>>(in, out, w, s, n, c);
  CUDA_CHECK(cudaGetLastError());
}

void v4_chain_graph(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t stream) {
  static ChainExec chain;
  cudaGraph_t graph = capture_chain(x, w, y, n, steps, c, stream);
  if (chain.exec) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(chain.exec, graph, &info) != cudaSuccess) {
      cudaGetLastError();  // refused (another topology): instantiate below
      cudaGraphExecDestroy(chain.exec);
      chain.exec = nullptr;
    }
  }
  if (!chain.exec) {
    const cudaError_t made = cudaGraphInstantiate(&chain.exec, graph, 0);
    if (made != cudaSuccess) {
      cudaGraphDestroy(graph);
      CUDA_CHECK(made);
    }
  }
  cudaGraphDestroy(graph);
  CUDA_CHECK(cudaGraphLaunch(chain.exec, stream));
}

}  // namespace ch11::solution
