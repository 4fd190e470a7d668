// GPT-2's weights in host memory, loaded from a safetensors file with Hugging Face's names.
//
//   auto w = gpt2::load_weights("model.safetensors", {.dtype = wb::DType::BF16});
//   w.layers[3].attn_w     // (3C, C) = [out, in]: y = x · Wᵀ + b
//
// Layout in memory: every matrix is [out, in], row-major, so that y = x · Wᵀ + b — the
// layout a GEMM with a transposed B reads, and a GEMV streams row by row. Hugging Face's
// Conv1D stores its weight the other way round, [in, out] (y = x · W + b), so the loader
// transposes c_attn, attn.c_proj, mlp.c_fc and mlp.c_proj. (Forgetting to is the classic
// bug: the square c_proj of attention even keeps its shape.) wte (V, C) and wpe (P, C) are
// embeddings, stored as they are; the LM head is wte itself: logits = x · wteᵀ.
//
// Names accepted, with or without the "transformer." prefix:
//   wte.weight (V,C)  wpe.weight (P,C)  ln_f.weight (C)  ln_f.bias (C)
//   h.N.ln_1.weight/.bias (C)          h.N.ln_2.weight/.bias (C)
//   h.N.attn.c_attn.weight (C,3C) .bias (3C)   h.N.attn.c_proj.weight (C,C) .bias (C)
//   h.N.mlp.c_fc.weight (C,4C) .bias (4C)      h.N.mlp.c_proj.weight (4C,C) .bias (C)
//   lm_head.weight (V,C), optional: when present it must equal wte.weight, shape and values
//     (compared element by element as stored), since this model ties the two.
//   h.N.attn.bias and h.N.attn.masked_bias (the causal-mask buffers some exporters save) are
//     ignored. Any other tensor is refused, and so is any missing one.
// Tensors may be F32, F16 or BF16; each is converted to the compute dtype (F32 or BF16,
// rounding to nearest even). The config comes from the shapes (see read_config).
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "declare/dtype.h"
#include "safetensors.h"

namespace gpt2 {

// Any problem with the weights: names the file, the tensor and what is wrong.
struct WeightsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A host tensor in the compute dtype: exactly one of f32 / bf16 holds the elements.
struct Tensor {
  std::vector<int64_t> shape;
  wb::DType dtype = wb::DType::F32;  // F32 or BF16
  std::vector<float> f32;
  std::vector<wb::BFloat16> bf16;

  int64_t numel() const;
  float at(int64_t i) const;  // element i (row-major) as float
  const void* data() const { return dtype == wb::DType::F32 ? static_cast<const void*>(f32.data()) : bf16.data(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * (dtype == wb::DType::F32 ? 4 : 2); }
};

struct Layer {                      // one transformer block; C = n_embd
  Tensor ln_1_w, ln_1_b;            // (C)      ln_1.weight, ln_1.bias
  Tensor attn_w, attn_b;            // (3C, C), (3C)  attn.c_attn: rows [q | k | v], head h at h*D
  Tensor attn_proj_w, attn_proj_b;  // (C, C), (C)  attn.c_proj
  Tensor ln_2_w, ln_2_b;            // (C)      ln_2
  Tensor fc_w, fc_b;                // (4C, C), (4C)  mlp.c_fc
  Tensor fc_proj_w, fc_proj_b;      // (C, 4C), (C)   mlp.c_proj
};

struct Weights {
  Config config;
  wb::DType dtype = wb::DType::F32;
  Tensor wte;  // (V, C) token embedding, also the LM head
  Tensor wpe;  // (P, C) position embedding
  std::vector<Layer> layers;
  Tensor ln_f_w, ln_f_b;  // (C)
};

struct LoadProgress {
  int64_t bytes_done, bytes_total;  // of the file's tensor data
  int tensors_done, tensors_total;
  std::string_view tensor;  // the one just converted
};

struct LoadOptions {
  wb::DType dtype = wb::DType::F32;                             // compute dtype of the host buffers: F32 or BF16
  int n_head = 0;                                               // 0: find it (read_config says where)
  const Config* expect = nullptr;                               // when set, the file must hold exactly this config
  std::function<void(const LoadProgress&)> progress = nullptr;  // after each tensor; may be empty
};

// The config of a file, from its tensors' shapes: V and C from wte, P from wpe, L from the
// h.N indices; every tensor must then have the shape this config implies. n_head shows in
// no shape, so it is taken from, in order: `n_head` if > 0; the file's __metadata__
// "n_head" (gpt2_random_weights writes it); "n_head" of config.json in the file's folder
// (a Hugging Face checkpoint folder has one); the preset with the same n_embd (124M ..
// 1.5B). Other sizes in __metadata__ or config.json must agree with the shapes.
Config read_config(const safetensors::File& file, int n_head = 0);

Weights load_weights(const safetensors::File& file, const LoadOptions& options = {});
Weights load_weights(const std::string& path, const LoadOptions& options = {});

// The Hugging Face name of each parameter, in the order the random-weight tool writes them:
// "transformer.wte.weight", ... (no prefix when `prefix` is false). The shapes are the
// file's ([in, out] for Conv1D weights).
struct ParamName {
  std::string name;
  std::vector<int64_t> file_shape;
};
std::vector<ParamName> parameter_names(const Config& c, bool prefix = true);

}  // namespace gpt2
