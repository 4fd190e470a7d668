// Arguments an op must refuse. A spec lists them (OpSpec::refused: k larger than the row,
// k < 1 ...); every launcher of the op must throw std::invalid_argument with a message
// saying what is wrong, before it launches anything. With a GPU the call runs under stream
// capture, so work it enqueued before refusing is counted, not run; the pointers it gets
// are placeholders it must never touch.
#include <stdexcept>

#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "declare/op.cuh"

namespace wb {

Args placeholder_args(const OpBase& op, const Variant& v, const Shape& shape) {
  std::vector<Args::Slot> slots;
  uintptr_t fake = 0x100000;
  for (const auto& t : op.common().tensors) {
    slots.push_back({&t, t.present_in(shape) ? reinterpret_cast<void*>(fake) : nullptr});
    fake += 0x100000;
  }
  return Args(shape, std::move(slots), reinterpret_cast<void*>(fake), v.workspace ? 256 : 0);
}

Outcome check_refusal(const OpBase& op, const Variant& v, const Refusal& r) {
  Shape shape = r.shape;
  if (op.common().derive) op.common().derive(shape);
  const Args a = placeholder_args(op, v, shape);

  const bool gpu = !gpu_missing_reason();
  std::optional<Stream> stream;
  if (gpu) {
    stream.emplace();
    CUDA_CHECK(cudaStreamBeginCapture(*stream, cudaStreamCaptureModeThreadLocal));
  }
  bool refused = false;
  std::string message, other;
  try {
    op.invoke(v.fn, a, gpu ? cudaStream_t(*stream) : nullptr);
  } catch (const NotImplemented& e) {
    if (gpu) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(*stream, &g);
      if (g) cudaGraphDestroy(g);
    }
    return Outcome::fail(Code::NotImplemented, e.what());
  } catch (const std::invalid_argument& e) {
    refused = true;
    message = e.what();
  } catch (const std::exception& e) {
    other = e.what();
  }
  size_t launched = 0;
  if (gpu) {
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(*stream, &g);
    if (end == cudaSuccess && g) {
      CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &launched));
      cudaGraphDestroy(g);
    } else {
      launched = 1;  // the capture was broken by what the launcher did: it did something
    }
    cudaGetLastError();
  }

  const std::string head = op.common().id() + " " + v.name + " with " + shape.text() + " (" + r.why + "): ";
  const std::string how =
      "check the arguments before launching and throw std::invalid_argument with a message "
      "that says which argument is wrong and what is allowed";
  if (!refused) {
    return Outcome::fail(Code::AcceptedBadArgs,
                         head + (other.empty() ? "accepted" : "failed with '" + other + "' instead of refusing") +
                             ": " + how + (v.file.empty() ? "" : " (in " + v.file + ")"));
  }
  if (launched > 0) {
    return Outcome::fail(Code::AcceptedBadArgs, head + "refused, but only after enqueuing " + std::to_string(launched) +
                                                    " operation(s) on the stream: " + how);
  }
  if (message.empty()) return Outcome::fail(Code::AcceptedBadArgs, head + "refused without a message: " + how);
  return Outcome::pass(head + "refused: " + message + (gpu ? "" : " (no GPU: launches were not counted)"));
}

}  // namespace wb
