// CUBLASLT_CHECK, for the chapters whose reference uses cuBLASLt. Same form as CUBLAS_CHECK:
// names the call, the file and line and the status, and throws wb::CudaError.
// Programs that use it link cuBLASLt (CUDA::cublasLt in CMake, -lcublasLt with nvcc).
#pragma once
#include <cublasLt.h>

#include "runtime/errors.cuh"

#define CUBLASLT_CHECK(call)                                             \
  do {                                                                   \
    const cublasStatus_t wb_status_ = (call);                            \
    if (wb_status_ != CUBLAS_STATUS_SUCCESS) {                           \
      ::wb::throw_cublaslt_error(wb_status_, #call, __FILE__, __LINE__); \
    }                                                                    \
  } while (0)
