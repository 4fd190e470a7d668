// Chapter 11 — streams, overlap and graphs: the interface between your code and the harness.
//
// You write the functions declared in namespace ch11::student, one exercise per file:
//   ex1_pinned_staging.cu   a host program: pageable arrays in and out, through pinned staging
//   ex2_pipeline.cu         copy in, compute, copy out, chunk by chunk over several streams
//   ex3_fork_join.cu        two independent GEMVs on two streams, joined back with events
//   ex4_graph.cu            a chain of small kernels captured once into a CUDA graph, replayed
//                           and updated for the next call
// Every function but ex1's staging pair receives a stream: all its work starts after what was
// on that stream before the call, and ends on it (the harness checks both, see spec.cu).
// All data is FP32.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ch11 {

// --- ex1: pinned staging -------------------------------------------------------------------
// The buffers a program copies through: `count` floats of PINNED (page-locked) host memory
// and `count` floats of device memory. The harness creates it, checks with
// cudaPointerGetAttributes that `pinned` is pinned and `device` is device memory, calls the
// round trip, destroys it, and checks that both are freed.
struct Staging {
  float* pinned = nullptr;  // cudaMallocHost
  float* device = nullptr;  // cudaMalloc
  size_t count = 0;
};
using StagingCreateFn = Staging(size_t count);
using StagingDestroyFn = void(Staging& staging);
// y[i] = a * x[i] + b for 0 <= i < n, where host_x and host_y are PAGEABLE host arrays (a
// std::vector's memory). Chunk by chunk, at most staging.count floats at a time: copy the
// chunk of x into staging.pinned, cudaMemcpyAsync it to staging.device on `stream`, launch
// the kernel on `stream` (in place), cudaMemcpyAsync it back, wait for `stream`, and copy the
// chunk out of staging.pinned into host_y. When it returns, host_y holds the result.
using StagedAxpbFn = void(const float* host_x, float* host_y, int64_t n, float a, float b, const Staging& staging,
                          cudaStream_t stream);
// The three parts of exercise 1, as the harness calls them.
struct StagedProgram {
  StagingCreateFn* create;
  StagingDestroyFn* destroy;
  StagedAxpbFn* run;
};

// --- ex2: the copy/compute pipeline ------------------------------------------------------
// y[i] = a * x[i] + b for 0 <= i < n. host_x and host_y are PINNED host arrays of n floats;
// dev_x and dev_y are device arrays of n floats for you to use (their contents are
// garbage). Copy x in, compute, copy y out, in chunks spread over several streams, so the
// copy-in of one chunk, the kernel of another and the copy-out of a third run at once. The
// work must start after what is already on `stream` (it may still be writing host_x), and
// everything must be joined back to `stream` before you return: the harness reads host_y
// after `stream`, and only then.
using PipelineFn = void(const float* host_x, float* host_y, float* dev_x, float* dev_y, int64_t n, float a, float b,
                        cudaStream_t stream);

// --- ex3: fork/join ----------------------------------------------------------------------
// y1 = A1 x1 and y2 = A2 x2: two independent GEMVs, A1 and A2 row-major m x k, x of k, y of
// m. Fork: one of them on a second stream of your own; join: `stream` waits for it before
// the call returns. Each GEMV alone leaves half the GPU idle, so together they take about
// the time of one.
using ForkJoinFn = void(const float* A1, const float* x1, float* y1, const float* A2, const float* x2, float* y2, int m,
                        int k, cudaStream_t stream);

// --- ex4: a CUDA graph -------------------------------------------------------------------
// A chain of `steps` small kernels, one launch per step: step 0 computes y[i] = x[i] * w[0]
// + c, step s > 0 computes y[i] = y[i] * w[s] + c (in place), for 0 <= i < n. Launched one by
// one, the chain costs `steps` launch overheads; captured into a graph once and replayed, it
// costs one. The next call may bring other pointers, another n, another c: update the
// instantiated graph (cudaGraphExecUpdate, or the kernel nodes' parameters) rather than
// instantiating again, and instantiate only when the update is refused.
using ChainFn = void(const float* x, const float* w, float* y, int n, int steps, float c, cudaStream_t stream);

namespace student {
Staging staging_create(size_t count);
void staging_destroy(Staging& staging);
StagedAxpbFn staged_axpb;
PipelineFn pipeline;
ForkJoinFn fork_join;
ChainFn chain_graph;
}  // namespace student

}  // namespace ch11
