#include "runtime/errors.cuh"

namespace wb {

bool is_sticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cudaGetErrorName(err) +
                      " (" + cudaGetErrorString(err) + ")",
                  is_sticky(err));
}

const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(
      std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cublas_status_name(status), false);
}

void throw_cublaslt_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                      cublas_status_name(status) + " (cuBLASLt)",
                  false);
}

}  // namespace wb
