// Device memory for the checks: inputs that can be fenced against unmapped memory, and
// outputs with guard bands before and after.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "declare/dtype.h"

namespace wb {

// An input buffer whose last byte is followed, when fenced, by unmapped memory: a kernel
// that reads past its end faults there, instead of reading the allocation's slack.
// Built with the CUDA virtual memory API: the buffer ends flush (to 16 bytes) with the end
// of a physical mapping; one more granule, mapped while unfenced (and filled with poison so
// that a read past the end makes NaNs), is unmapped while fenced. Where the API is not
// available, a plain allocation is used and fencing does nothing (fenced() says so).
class FencedBuffer {
 public:
  FencedBuffer() = default;
  explicit FencedBuffer(size_t bytes);
  ~FencedBuffer();
  FencedBuffer(const FencedBuffer&) = delete;
  FencedBuffer& operator=(const FencedBuffer&) = delete;

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void set_fence(bool on);
  bool can_fence() const { return vmm_; }
  // Fills the granule past the end with the dtype's poison (while unfenced).
  void poison_tail(DType t);

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  bool vmm_ = false, fenced_ = false;
  CUdeviceptr base_ = 0;
  size_t reserve_ = 0, body_ = 0, granule_ = 0;
  CUmemGenericAllocationHandle body_handle_ = 0, tail_handle_ = 0;
  void* plain_ = nullptr;
};

// An output buffer with `guard` bytes before and after it, all poisoned, so that a write
// just outside the output is seen.
class GuardedBuffer {
 public:
  static constexpr size_t kGuardBefore = 4096, kGuardAfter = 65536;
  GuardedBuffer() = default;
  explicit GuardedBuffer(size_t bytes);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* data() const { return static_cast<char*>(base_) + kGuardBefore; }
  size_t bytes() const { return bytes_; }
  // Poisons the whole region, guards included, on `stream` (and waits).
  void poison(DType t, cudaStream_t stream);
  // Bytes of the guards that no longer hold the poison: (before, after), and the byte
  // offset (from the end of the output) of the first change after it.
  struct GuardDamage {
    int64_t before = 0, after = 0, first_after = -1, last_before = -1;
  };
  GuardDamage check_guards(DType t) const;

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

// Fills `bytes` at `ptr` with the dtype's poison pattern, on `stream`.
void fill_poison(void* ptr, size_t bytes, DType t, cudaStream_t stream);

// Elements of `bytes` at `ptr` that no longer hold the dtype's poison, counted on the GPU
// through `stream` (and waited for): "was anything written?" without copying the output out.
// `counter` is one device word of the caller's, allocated beforehand: this may run while the
// legacy stream is held, where an allocation or a free (which synchronizes) would wait forever.
int64_t count_unpoisoned(const void* ptr, size_t bytes, DType t, unsigned long long* counter, cudaStream_t stream);

// A kernel on the legacy default stream that holds it (and every blocking stream, which
// waits for it) until release() or a time limit, so that work a launcher puts there cannot
// run before the harness has read the outputs through a non-blocking stream.
class LegacyGate {
 public:
  LegacyGate();
  ~LegacyGate();
  void hold();     // launches the gate kernel on the legacy stream
  void release();  // lets it finish
  bool timed_out() const;

 private:
  volatile int* flag_ = nullptr;  // host-mapped: 1 = release
  int* timeout_hit_ = nullptr;
};

}  // namespace wb
