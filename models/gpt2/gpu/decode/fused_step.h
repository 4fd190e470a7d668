// DecodePath::Fused: the fused decode step (decode_step.h; fused_step.cu says what it runs).
#pragma once
#include <cuda_bf16.h>

#include "decode/decode_step.h"

namespace gpt2 {

// The model's buffers are untyped (their type is the model's dtype): the steps view them as T.
template <class T>
const T* in(const void* p) {
  return static_cast<const T*>(p);
}
template <class T>
T* out(void* p) {
  return static_cast<T*>(p);
}

// The embedding, the L layers in five kernels each, and ln_f + the LM head + argmax in one.
// No buffers of its own: it runs in the model's activations and the fused buffers every path
// shares (Model::Impl::alloc_fused), so check_fused_decode can build one for a model that
// decodes op by op. PersistentStep replaces the layers and keeps the rest.
class FusedStep : public DecodeStep {
 public:
  explicit FusedStep(Model::Impl& m) : m_(m) {}
  void run(cudaStream_t s) override;
  const char* name() const override { return decode_path_name(DecodePath::Fused); }

 protected:
  // The L layers of a BF16 model on the residual stream x (C, in buf.tmp), after the
  // embedding: v6's five kernels per layer here.
  virtual void layers_bf16(__nv_bfloat16* x, float eps);
  Model::Impl& m_;

 private:
  template <class T>
  void run_as(cudaStream_t s);
  template <class T>
  void layers(T* x, float eps);
  template <class T>
  void lm_head(const T* x, float eps);
};

}  // namespace gpt2
