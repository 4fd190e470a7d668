// The decode step's CUDA Graph, checked (exercise 4 and the solution alike):
//   * the capture's error path: a step that throws while it is being captured must leave the
//     stream out of capture mode and usable (check_capture_error_path);
//   * the replays: from one state, `steps` op-by-op steps, then the graph (captured there when
//     there is none yet, as decode() captures it) replayed `steps` times, each replay's logits
//     equal to its op-by-op step's, bit for bit. A capture that runs a step of its own (a
//     "warm-up") leaves the cache and the position one step ahead: the replays then answer
//     the next position's question, which several steps in a row show even where one does not.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "model_impl.cuh"
#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"

namespace gpt2 {

std::string check_capture_error_path(CaptureFn* capture) {
  static const char* kPlanted = "a failure planted in the step by check_capture_error_path";
  wb::Stream stream;
  wb::DeviceBuffer<int> scratch(64);
  cudaGraphExec_t returned = nullptr;
  std::string problem;
  bool threw = false;
  try {
    returned = capture(stream, [&](cudaStream_t s) {
      CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, scratch.bytes(), s));  // some work, captured
      throw std::runtime_error(kPlanted);
    });
  } catch (const wb::NotImplemented&) {
    throw;  // a stub: the caller reports it as such
  } catch (const std::exception&) {
    threw = true;
  }
  if (!threw) {
    problem = "the step threw while it was being captured, and the capture function returned normally (" +
              std::string(returned ? "with a graph" : "with no graph") +
              "): let the exception through after ending the capture";
    if (returned) cudaGraphExecDestroy(returned);
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t query = cudaStreamIsCapturing(stream, &status);
  if (query != cudaSuccess || status != cudaStreamCaptureStatusNone) {
    if (problem.empty()) {
      problem = "after the step threw, the stream was left in capture mode (" +
                std::string(query != cudaSuccess ? cudaGetErrorName(query) : "capture still active") +
                "): every later call on it fails. End the capture (cudaStreamEndCapture, then destroy the graph "
                "it gives) before rethrowing";
    }
    cudaGraph_t left = nullptr;
    cudaStreamEndCapture(stream, &left);  // clean up for the rest of this process
    if (left) cudaGraphDestroy(left);
  }
  cudaGetLastError();
  // The stream must take work again, and finish it.
  const cudaError_t again = cudaMemsetAsync(scratch.data(), 1, scratch.bytes(), stream);
  const cudaError_t done = again == cudaSuccess ? cudaStreamSynchronize(stream) : again;
  if (done != cudaSuccess && problem.empty()) {
    problem = std::string("after the step threw, the stream did not take new work (") + cudaGetErrorName(done) +
              "): end the capture before rethrowing";
  }
  cudaGetLastError();
  return problem;
}

std::string Model::check_graph_replay(int32_t token, int steps) {
  Impl& m = *impl_;
  if (steps < 1) throw std::invalid_argument("check_graph_replay: steps must be at least 1");
  m.require_tokens(std::span<const int32_t>(&token, 1), m.pos + steps);
  if (m.pos == 0) throw std::logic_error("check_graph_replay before prefill");
  if (std::string e = check_capture_error_path(capture_fn(m.opt)); !e.empty()) return "capture error path: " + e;
  const int pos0 = m.pos;
  const size_t bytes = size_t(m.V) * m.es;
  auto set_state = [&](int32_t t, int p) {
    m.pinned[1] = t;
    m.pinned[3] = p;
    CUDA_CHECK(cudaMemcpyAsync(m.d_token, &m.pinned[1], 4, cudaMemcpyHostToDevice, m.stream));
    CUDA_CHECK(cudaMemcpyAsync(m.d_pos, &m.pinned[3], 4, cudaMemcpyHostToDevice, m.stream));
  };
  // The op-by-op steps, each fed the previous one's argmax (on the device).
  std::vector<std::vector<unsigned char>> eager(steps, std::vector<unsigned char>(bytes));
  set_state(token, pos0);
  for (int s = 0; s < steps; ++s) {
    m.decode_once(m.stream);
    ++m.eager_steps;
    CUDA_CHECK(cudaMemcpyAsync(eager[s].data(), m.logits, bytes, cudaMemcpyDeviceToHost, m.stream));
  }
  wb::sync_with_deadline(m.stream, "gpt2 eager steps");
  // The graph from the same state.
  set_state(token, pos0);
  if (m.exec == nullptr) m.try_capture();
  if (m.exec == nullptr) return "no graph to replay: " + m.graph_problem;
  std::vector<unsigned char> replay(bytes);
  std::string diff;
  for (int s = 0; s < steps && diff.empty(); ++s) {
    CUDA_CHECK(cudaGraphLaunch(m.exec, m.stream));
    CUDA_CHECK(cudaMemcpyAsync(replay.data(), m.logits, bytes, cudaMemcpyDeviceToHost, m.stream));
    wb::sync_with_deadline(m.stream, "gpt2 graph replay");
    for (size_t i = 0; i < bytes; ++i) {
      if (eager[s][i] == replay[i]) continue;
      diff = "replay " + std::to_string(s + 1) + " of " + std::to_string(steps) +
             ": its logits differ from the op-by-op step's (first at byte " + std::to_string(i) + " of " +
             std::to_string(bytes) + ")";
      if (s == 0) {
        diff +=
            "; if only a warm-up step runs before capturing, the graph starts one position ahead: capture "
            "without running the step (it advances the cache and the position)";
      }
      break;
    }
  }
  // Leave the cache and the position as after `steps` steps, whatever the capture did.
  m.pos = pos0 + steps;
  m.pinned[3] = m.pos;
  CUDA_CHECK(cudaMemcpyAsync(m.d_pos, &m.pinned[3], 4, cudaMemcpyHostToDevice, m.stream));
  wb::sync_with_deadline(m.stream, "gpt2 graph check");
  return diff;
}

}  // namespace gpt2
