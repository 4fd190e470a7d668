// The decode step (T = 1) as one interface, with one implementation per DecodePath (model.h):
//   OpsStep         ops_step.cu         the ops of ops.h one kernel each, as Options::kernels picks
//   FusedStep       fused_step.cu       the solution's v6 kernels and chapter 8's split-KV attention
//   PersistentStep  persistent_step.cu  the fused step with its L layers in one persistent kernel
// The model builds the step its options name once, on load (make_decode_step), and runs it for
// every decode step, eager or captured into a CUDA Graph: Model::Impl::decode_once is the only
// place that picks. The batched step (batch.cu) is not one of these: it steps B sequences,
// each with its own cache and position, and is always op by op.
#pragma once
#include <cuda_runtime.h>

#include <memory>

#include "model.h"

namespace gpt2 {

class DecodeStep {
 public:
  virtual ~DecodeStep() = default;
  // One step on `s`: the token at *d_token at position *d_pos through the model, the logits,
  // the greedy next token into d_next, d_token, d_history, and *d_pos advanced — all on the
  // device, so that one graph of it serves every step. Runs while a graph is captured, so it
  // allocates nothing and synchronizes nothing.
  virtual void run(cudaStream_t s) = 0;
  // The path's name: gpt2's --decode= spelling (decode_path_name).
  virtual const char* name() const = 0;
};

// The step m.opt.decode names, with the buffers it alone needs (allocated here, on load).
std::unique_ptr<DecodeStep> make_decode_step(Model::Impl& m);

}  // namespace gpt2
