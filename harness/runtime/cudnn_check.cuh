// CUDNN_CHECK, for the chapters whose reference uses cuDNN. Same form as CUDA_CHECK.
#pragma once
#include <cudnn.h>

#include <string>

#include "runtime/errors.cuh"

namespace wb {

[[noreturn]] inline void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(
      std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cudnnGetErrorString(status),
      false);
}

}  // namespace wb

#define CUDNN_CHECK(call) WB_CHECK_STATUS(cudnnStatus_t, CUDNN_STATUS_SUCCESS, ::wb::throw_cudnn_error, call, #call)

#include <map>
#include <memory>
#include <mutex>

namespace wb {

// One cuDNN handle per device, created on first use and kept for the program's life (a
// handle costs milliseconds to create: never per call). Set its stream before each use.
inline cudnnHandle_t cudnn_handle() {
  struct Owner {
    cudnnHandle_t h = nullptr;
    Owner() { CUDNN_CHECK(cudnnCreate(&h)); }
    ~Owner() { cudnnDestroy(h); }
  };
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Owner>> handles;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto& h = handles[device];
  if (!h) h = std::make_unique<Owner>();
  return h->h;
}

}  // namespace wb
