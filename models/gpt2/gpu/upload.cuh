// Weight upload: host tensors into device memory, fast.
//
// A plain cudaMemcpy from pageable host memory is staged by the driver through its own small
// pinned buffer, one piece at a time, the CPU and the copy engine taking turns. Here the
// model does the staging itself, with two pinned buffers of `chunk` bytes and a stream of
// its own: while the copy engine moves chunk i out of one buffer, the CPU fills the other
// with chunk i + 1 (double buffering). `--upload=plain` in the gpt2 tool runs the plain
// copies instead, so the two can be compared on a machine (the tool prints GB/s for both).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace gpt2 {

struct UploadPiece {
  void* dst;        // device
  const void* src;  // host, pageable
  size_t bytes;
};

struct UploadStats {
  double bytes = 0;
  double ms = 0;  // wall-clock, from the first copy to the last one done
  double gbps() const { return ms > 0 ? bytes / (ms * 1e6) : 0; }
};

enum class UploadMode { Staged, Plain };

// Copies every piece and returns when all have landed. `progress(done, total)` is called
// (on this thread) as bytes are handed to the copy engine; it may be empty.
UploadStats upload(const std::vector<UploadPiece>& pieces, UploadMode mode,
                   const std::function<void(size_t done, size_t total)>& progress = nullptr,
                   size_t chunk = size_t{32} << 20);

}  // namespace gpt2
