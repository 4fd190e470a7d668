// What the GPU did, and when: kernels, copies and memsets with their streams and GPU
// timestamps, recorded by CUPTI's activity API while a trace runs, written as a Chrome trace
// (the JSON that Perfetto, chrome://tracing and scripts/lib/timeline_plot.py read). It is
// what Nsight Systems records with `--trace=cuda`, for a machine that has no nsys:
//
//   wb::ActivityTrace trace;
//   if (!trace.start()) { /* trace.why(): CUPTI missing, or a profiler holds it */ }
//   trace.section("pipeline: serial", stream, [&] { ...work on streams... });
//   trace.write("trace.json");                         // flushes, writes, stops
//
// Only the sections are recorded: work between them (a benchmark's timed loop) runs without
// the tracer's cost. CUPTI's first recorded launch of each kernel carries milliseconds of its
// own setup, so section() runs the call twice: once in a section with no name (recorded, left
// out of the file), then in the named one, which shows the call as it runs. begin_section and
// end_section mark a section by hand (without that first call). A section is a named span of
// time (a row of its own in the trace); timeline_plot.py draws one panel per section. One
// trace at a time per process.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
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

  // One call of `fn` (its work on `stream`, or forked from it and joined back) as the section
  // `name`: fn runs once in an unnamed section first, so that CUPTI's setup for its kernels
  // lands there, then again in the named one. fn must give the same work each time it runs.
  // Without a running trace fn does not run.
  void section(const std::string& name, cudaStream_t stream, const std::function<void()>& fn);

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
