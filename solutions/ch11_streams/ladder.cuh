// The chapter 11 solution ladder: one file per step, each declaring its launchers here.
#pragma once
#include <vector>

#include "ch11.cuh"

namespace ch11::solution {

// v0_pinned_staging.cu — exercise 1: the program through pinned staging, one chunk at a time.
Staging v0_staging_create(size_t count);
void v0_staging_destroy(Staging& staging);
StagedAxpbFn v0_staged_axpb;
// y[i] = a x[i] + b on `stream` (x and y may be the same array): the kernel of exercises 1 and 2.
void launch_axpb(const float* x, float* y, int64_t n, float a, float b, cudaStream_t stream);

// v1_serial_chunks.cu — exercise 2 in chunks, all on the given stream: no overlap yet.
PipelineFn v1_pipeline;

// v2_two_streams.cu — two streams forked from the given one and joined back with events:
// the pipeline's chunks alternate between them; the two GEMVs of exercise 3 run at once.
PipelineFn v2_pipeline;
ForkJoinFn v2_fork_join;
// One block per row GEMV on `stream` (exercise 3's kernel).
void launch_gemv(const float* A, const float* x, float* y, int m, int k, cudaStream_t stream);

// Streams and events of the ladder, created on first use and kept for the process:
// non-blocking streams (a blocking one would also wait for the legacy default stream) and
// events without timing (cheaper to record).
struct StreamSet {
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> done;  // one per stream: its last chunk
  cudaEvent_t fork = nullptr;     // recorded on the given stream; every stream waits for it
};
const StreamSet& stream_set(int count);
// Fork: every stream of `set` (the first `count`) waits for what is on `stream` now.
void fork_from(cudaStream_t stream, const StreamSet& set, int count);
// Join: `stream` waits for everything now on the first `count` streams of `set`.
void join_into(cudaStream_t stream, const StreamSet& set, int count);

// v3_n_streams.cu — N streams, the chunk size chosen from n: enough chunks in flight to hide
// the fill and drain of the pipeline, chunks large enough that each copy runs at full speed.
PipelineFn v3_pipeline;
int64_t v3_chunk(int64_t n);

// v4_graph.cu — exercise 4: the chain captured once, replayed, updated on the next call.
ChainFn v4_chain_graph;
// One step of the chain on `stream`: out[i] = in[i] * w[s] + c.
void launch_step(const float* in, float* out, const float* w, int s, int n, float c, cudaStream_t stream);

}  // namespace ch11::solution
