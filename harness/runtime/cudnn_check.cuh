// CUDNN_CHECK, for the chapters whose reference uses cuDNN. Same form as CUDA_CHECK.
#pragma once
#include <cudnn.h>

#include <string>

#include "runtime/errors.cuh"

#define CUDNN_CHECK(call)                                                                                           \
  do {                                                                                                              \
    const cudnnStatus_t wb_status_ = (call);                                                                        \
    if (wb_status_ != CUDNN_STATUS_SUCCESS) {                                                                       \
      throw ::wb::CudaError(std::string(#call) + " failed at " + __FILE__ + ":" + std::to_string(__LINE__) + ": " + \
                                cudnnGetErrorString(wb_status_),                                                    \
                            false);                                                                                 \
    }                                                                                                               \
  } while (0)

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
