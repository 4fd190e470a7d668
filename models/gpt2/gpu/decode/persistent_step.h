// DecodePath::Persistent: the fused step with its layers in one persistent kernel
// (decode_step.h; persistent_step.cu).
#pragma once
#include <cuda_bf16.h>

#include "decode/fused_step.h"
#include "runtime/buffers.cuh"

namespace gpt2 {

// The fused step's embedding and ln_f + LM head + argmax around ONE kernel for the L layers
// (solutions/ch09_gpt2/decode/v9_persistent_decode.cu). BF16 weights only, no INT8 copies
// (validate refuses the others, so layers_bf16 is the only form it needs).
class PersistentStep final : public FusedStep {
 public:
  // Fills the layer table and zeroes the kernel's scratch; throws std::invalid_argument when
  // the kernel does not take the model's shape.
  explicit PersistentStep(Model::Impl& m);
  const char* name() const override { return decode_path_name(DecodePath::Persistent); }

 private:
  void layers_bf16(__nv_bfloat16* x, float eps) override;
  // The layers' pointers as the kernel reads them (L), and its scratch (grid barrier,
  // attention partials): one allocation, filled once, since the weights and caches do not move.
  wb::DeviceBuffer<char> buf_;
  const void* d_layers_ = nullptr;
  void* scratch_ = nullptr;
};

}  // namespace gpt2
