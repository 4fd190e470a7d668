// Running a learner's launcher once, and turning everything that can go wrong into an
// Outcome with a message a learner can act on: not implemented yet, a bad launch, a fault
// (with the sanitizer command), a hang (the process exits: a hung kernel cannot be
// stopped), or wrong values (from the chapter's check).
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "check/outcome.h"

namespace wb {

// Thrown by a stub launcher: the exercise has not been written yet.
struct NotImplemented : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown by a library reference that has no engine (kernel) for a shape or mode: the
// case is skipped with the library's reason, never failed.
struct NoEngine : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown by a launch adapter that has found the launcher's mistake itself (pageable host
// memory where pinned memory is required, host memory left allocated ...): the case fails
// with this code and the message, as any other check's failure does.
struct Rejected : std::runtime_error {
  Rejected(Code c, const std::string& what) : std::runtime_error(what), code(c) {}
  Code code;
};

// In a stub launcher: WB_NOT_IMPLEMENTED("chapters/ch01_indexing/ex1_vector_add.cu");
#define WB_NOT_IMPLEMENTED(file)                                                               \
  throw ::wb::NotImplemented(std::string("not implemented yet: write the kernel in ") + file + \
                             " and delete the WB_NOT_IMPLEMENTED line in its launcher")

// Outcome and its codes: host/outcome.h (host code reads them too).
inline std::string_view kind_name(Code c) { return code_name(c); }

// Runs `launch` on `stream` and waits for it (at most WORKBOOK_KERNEL_TIMEOUT seconds,
// default 60). `what` names the op and shape for the messages ("vector_add n=1025").
// Returns Pass when the kernel ran to completion without an error.
Outcome run_launcher(const std::string& what, const std::function<void(cudaStream_t)>& launch, cudaStream_t stream);

// Waits for `stream`; if the work is still running after the time limit, prints what hung
// and ends the process with exit code 124. Errors are thrown as CudaError.
void sync_with_deadline(cudaStream_t stream, const std::string& what);

// Waits for every piece of work on the current device, on any stream (cudaDeviceSynchronize),
// under the same time limit, and returns how long the host waited, in milliseconds. Called
// right after a stream has finished, a long wait means work was left running elsewhere.
double device_sync_with_deadline(const std::string& what);

}  // namespace wb
