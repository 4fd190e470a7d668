// The decode step's capture as a function type: exercise 4 writes one
// (chapters/ch09_gpt2/ex4_decode_graph.cu), the solution another
// (solutions/ch09_gpt2/block_and_graph.cu); the model runs the one its options name (model.h)
// and checks it (graph_check.cu).
#pragma once
#include <cuda_runtime.h>

#include <functional>

namespace gpt2 {

// Captures the work `step` puts on `stream` as a CUDA Graph and returns it instantiated,
// ready for cudaGraphLaunch. Nothing runs while capturing, and no step of its own either (a
// step advances the cache and the position, which the graph's replays then skip). Throws
// wb::CudaError (with the capture ended) when something in the step cannot be captured, and
// lets an exception of the step through after ending the capture.
using CaptureFn = cudaGraphExec_t(cudaStream_t stream, const std::function<void(cudaStream_t)>& step);

}  // namespace gpt2
