// Staged weight upload (upload.cuh): two pinned buffers, a copy stream, one event per buffer.
#include "upload.cuh"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"

namespace gpt2 {
namespace {

// Page-locked host memory: the copy engine reads it directly, with no driver staging.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) { CUDA_CHECK(cudaMallocHost(&p_, bytes)); }
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  char* data() { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
};

}  // namespace

UploadStats upload(const std::vector<UploadPiece>& pieces, UploadMode mode,
                   const std::function<void(size_t, size_t)>& progress, size_t chunk) {
  UploadStats stats;
  for (const auto& p : pieces) stats.bytes += double(p.bytes);
  const size_t total = static_cast<size_t>(stats.bytes);
  size_t done = 0;
  const auto start = std::chrono::steady_clock::now();

  if (mode == UploadMode::Plain) {
    for (const auto& p : pieces) {
      if (p.bytes) CUDA_CHECK(cudaMemcpy(p.dst, p.src, p.bytes, cudaMemcpyHostToDevice));
      done += p.bytes;
      if (progress) progress(done, total);
    }
  } else {
    chunk = std::max<size_t>(chunk, 1 << 20);
    PinnedBuffer staging[2] = {PinnedBuffer(chunk), PinnedBuffer(chunk)};
    wb::Event landed[2];
    bool in_flight[2] = {false, false};
    wb::Stream copies;
    int slot = 0;
    for (const auto& p : pieces) {
      for (size_t at = 0; at < p.bytes; at += chunk) {
        const size_t n = std::min(chunk, p.bytes - at);
        // This buffer's previous chunk must have left before it is refilled.
        if (in_flight[slot]) CUDA_CHECK(cudaEventSynchronize(landed[slot].get()));
        std::memcpy(staging[slot].data(), static_cast<const char*>(p.src) + at, n);
        CUDA_CHECK(
            cudaMemcpyAsync(static_cast<char*>(p.dst) + at, staging[slot].data(), n, cudaMemcpyHostToDevice, copies));
        landed[slot].record(copies);
        in_flight[slot] = true;
        slot ^= 1;
        done += n;
        if (progress) progress(done, total);
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(copies));
  }
  stats.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace gpt2
