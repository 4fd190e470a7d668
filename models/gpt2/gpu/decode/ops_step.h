// DecodePath::Ops: the op-by-op decode step (decode_step.h).
#pragma once
#include "decode/decode_step.h"

namespace gpt2 {

// The model's own step at T = 1 (Model::Impl::run_step): the embedding, the blocks through
// the ops of ops.h, ln_f, the LM head and the argmax, each op on the kernel Options::kernels
// names. The same step that prefill runs at T = the prompt's length.
class OpsStep final : public DecodeStep {
 public:
  explicit OpsStep(Model::Impl& m) : m_(m) {}
  void run(cudaStream_t s) override;
  const char* name() const override { return decode_path_name(DecodePath::Ops); }

 private:
  Model::Impl& m_;
};

}  // namespace gpt2
