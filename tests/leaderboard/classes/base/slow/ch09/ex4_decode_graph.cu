// Fixture submission "slow", chapter 9, exercise 4: the decode step captured once as a CUDA Graph;
// a step that throws ends the capture before the exception goes on (host code).
#include <functional>

#include "runtime/errors.cuh"
#include "ops.h"

namespace ch09::student {

cudaGraphExec_t capture_graph(cudaStream_t stream, const std::function<void(cudaStream_t)>& step) {
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    step(stream);
  } catch (...) {
    cudaGraph_t partial = nullptr;  // end the capture, so the stream can be used again
    cudaStreamEndCapture(stream, &partial);
    if (partial != nullptr) cudaGraphDestroy(partial);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(err);
  return exec;
}

}  // namespace ch09::student
