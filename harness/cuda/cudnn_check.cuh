// CUDNN_CHECK, for the chapters whose reference uses cuDNN. Same form as CUDA_CHECK.
#pragma once
#include <cudnn.h>

#include <string>

#include "cuda/errors.cuh"

#define CUDNN_CHECK(call)                                                                   \
  do {                                                                                      \
    const cudnnStatus_t wb_status_ = (call);                                                \
    if (wb_status_ != CUDNN_STATUS_SUCCESS) {                                               \
      throw ::wb::CudaError(std::string(#call) + " failed at " + __FILE__ + ":" +           \
                                std::to_string(__LINE__) + ": " + cudnnGetErrorString(wb_status_), \
                            false);                                                         \
    }                                                                                       \
  } while (0)
