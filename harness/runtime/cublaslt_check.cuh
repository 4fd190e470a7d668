// CUBLASLT_CHECK, for the chapters whose reference uses cuBLASLt. Same form as CUBLAS_CHECK:
// names the call, the file and line and the status, and throws wb::CudaError.
// Programs that use it link cuBLASLt (CUDA::cublasLt in CMake, -lcublasLt with nvcc).
#pragma once
#include <cublasLt.h>

#include "runtime/errors.cuh"

#define CUBLASLT_CHECK(call) \
  WB_CHECK_STATUS(cublasStatus_t, CUBLAS_STATUS_SUCCESS, ::wb::throw_cublaslt_error, call, #call)
