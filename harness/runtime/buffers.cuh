// RAII owners: device buffers, streams, events and a cuBLAS handle. Move-only; freed in
// the destructor, so a test that throws half-way leaks nothing.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/errors.cuh"
#include "check/compare.h"

namespace wb {

// Fills `bytes` with a repeated pattern of `pattern_size` (1, 2 or 4) bytes.
void fill_pattern(void* ptr, size_t bytes, uint32_t pattern, int pattern_size, cudaStream_t stream);

// Fills `n` floats with values uniform in [lo, hi), made on the GPU from `seed` and each
// element's index (a counter-based hash), on `stream`. For inputs that must change between
// timed launches without a host-to-device copy; not the same numbers as wb::Rng makes.
void fill_uniform(float* ptr, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream);

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMalloc(&ptr_, bytes()));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // never throws; a sticky error here is reported elsewhere
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void upload(const std::vector<T>& host) {
    if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    if (count_ > 0) CUDA_CHECK(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  // Writes the type's poison (a NaN no arithmetic makes) into every element, and waits
  // for it: the kernel under test may run on another (non-blocking) stream, which would
  // not wait for work on this one.
  void poison(cudaStream_t stream = nullptr) {
    fill_pattern(ptr_, bytes(), Poison<T>::bits, sizeof(Poison<T>::bits), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// The owner of one library handle (a stream, an event, a cuBLAS handle): Destroy(handle) in
// the destructor; neither copied nor moved. The derived class creates the handle.
template <class H, auto Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  ~UniqueHandle() {
    if (h_) Destroy(h_);
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  H get() const { return h_; }
  operator H() const { return h_; }

 protected:
  H h_ = nullptr;
};

class Stream : public UniqueHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&h_, cudaStreamNonBlocking)); }
};

class Event : public UniqueHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  Event() { CUDA_CHECK(cudaEventCreate(&h_)); }
  void record(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(h_, s)); }
  // Milliseconds from `start` to this event (both recorded and complete).
  float ms_since(const Event& start) const {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.h_, h_));
    return ms;
  }
};

class CublasHandle : public UniqueHandle<cublasHandle_t, cublasDestroy> {
 public:
  CublasHandle() { CUBLAS_CHECK(cublasCreate(&h_)); }
};

// One cuBLAS handle per thread for the library references, bound to `stream`.
cublasHandle_t cublas_for(cudaStream_t stream);

}  // namespace wb
