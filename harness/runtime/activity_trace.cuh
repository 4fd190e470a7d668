// What the GPU did, and when: kernels, copies and memsets with their streams and GPU
// timestamps, recorded by CUPTI's activity API while a trace runs, written as a Chrome trace
// (the JSON that Perfetto, chrome://tracing and scripts/lib/timeline_plot.py read). It is
// what Nsight Systems records with `--trace=cuda`, for a machine that has no nsys:
//
//   wb::ActivityTrace trace;
//   if (!trace.start()) { /* trace.why(): CUPTI missing, or a profiler holds it */ }
//   trace.begin_section("pipeline: serial", stream);   // waits for the stream, records from here
//   ...work on streams...
//   trace.end_section(stream);                         // waits for the stream, stops recording
//   trace.write("trace.json");                         // flushes, writes, stops
//
// Only the sections are recorded: work between them (a benchmark's timed loop) runs without
// the tracer's cost. A section with no name is recorded and left out of the file: CUPTI's
// first launch of a kernel carries milliseconds of its own setup, so a call made once in an
// unnamed section and again in a named one shows the named call as it runs. A section is a named span of time (a row of
// its own in the trace); timeline_plot.py draws one panel per section. One trace at a time per process.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

namespace wb {

class ActivityTrace {
 public:
  ActivityTrace();
  ~ActivityTrace();  // stops recording if write() was not called
  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;

  bool start();  // false when it cannot (why() says why)
  const std::string& why() const { return why_; }

  // A section: recording from when the stream's earlier work is done to end_section's own
  // wait for it (end_section(nullptr) waits for the legacy stream).
  void begin_section(const std::string& name, cudaStream_t stream);
  void end_section(cudaStream_t stream);

  // Flushes CUPTI's buffers, stops recording and writes the trace (to a temporary name,
  // renamed at the end). Throws std::runtime_error when it cannot.
  void write(const std::string& path);

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string why_;
  bool running_ = false;
};

}  // namespace wb
