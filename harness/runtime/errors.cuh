// One error macro per library. Each names the call, the file and line, and the library's
// own error name, and throws wb::CudaError so a test can report it and go on.
//
//   CUDA_CHECK(cudaMalloc(&p, bytes));
//   CUBLAS_CHECK(cublasSgemm(...));
//   my_kernel<<<grid, block, 0, stream>>>(...);  WB_CHECK_LAUNCH();
//
// CUDNN_CHECK lives in harness/runtime/cudnn_check.cuh, for the chapters that use cuDNN.
// CUBLASLT_CHECK lives in harness/runtime/cublaslt_check.cuh, for the chapters that use cuBLASLt.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace wb {

struct CudaError : std::runtime_error {
  CudaError(const std::string& what, bool sticky) : std::runtime_error(what), sticky(sticky) {}
  bool sticky;  // the context is lost (e.g. an illegal address): no later CUDA call can work
};

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
const char* cublas_status_name(cublasStatus_t status);
// cuBLASLt reports cublasStatus_t too; the message says the call came from cuBLASLt.
// CUBLASLT_CHECK (harness/runtime/cublaslt_check.cuh) throws through this.
[[noreturn]] void throw_cublaslt_error(cublasStatus_t status, const char* call, const char* file, int line);

// True for errors after which the CUDA context is unusable (faults inside a kernel).
bool is_sticky(cudaError_t err);

}  // namespace wb

// The form every check macro shares: `call` is evaluated once, and a status other than `ok`
// goes to `thrower` with the call's text (as written: `text`), the file and the line.
#define WB_CHECK_STATUS(Status, ok, thrower, call, text) \
  do {                                                   \
    const Status wb_status_ = (call);                    \
    if (wb_status_ != ok) {                              \
      thrower(wb_status_, text, __FILE__, __LINE__);     \
    }                                                    \
  } while (0)

#define CUDA_CHECK(call) WB_CHECK_STATUS(cudaError_t, cudaSuccess, ::wb::throw_cuda_error, call, #call)
#define CUBLAS_CHECK(call) WB_CHECK_STATUS(cublasStatus_t, CUBLAS_STATUS_SUCCESS, ::wb::throw_cublas_error, call, #call)

// After a <<<...>>> launch: catches bad launch configurations at once.
#define WB_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
