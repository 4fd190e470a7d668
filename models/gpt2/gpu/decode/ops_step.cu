// The op-by-op decode step (ops_step.h).
#include "decode/ops_step.h"
#include "model_impl.cuh"

namespace gpt2 {

void OpsStep::run(cudaStream_t s) { m_.run_step(1, m_.d_token, s); }

}  // namespace gpt2
