// A GPT-2 with random weights, written as a safetensors file with Hugging Face's names, for
// tests and for machines that cannot download a checkpoint.
//
// GPT-2's initialisation: every matrix and both embeddings ~ N(0, 0.02²); the two residual
// projections (attn.c_proj and mlp.c_proj weights) ~ N(0, (0.02 / sqrt(2·n_layer))²), so the
// residual stream's variance does not grow with depth. GPT-2 starts LayerNorm gains at 1 and
// every shift and bias at 0; with `gpt2_affine = false` (the default) they are drawn instead,
// gains ~ N(1, 0.1²), LayerNorm shifts ~ N(0, 0.05²), biases ~ N(0, 0.02²), so that a test
// notices a gain, shift or bias that is dropped or applied twice.
//
// Each tensor's values depend only on the seed and the tensor's name (without the
// "transformer." prefix): the same seed gives the same model in every dtype and naming.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config.h"
#include "safetensors.h"

namespace gpt2 {

struct RandomOptions {
  uint64_t seed = 1;
  safetensors::Dtype dtype = safetensors::Dtype::F32;  // F32, F16 or BF16 (rounded to nearest even)
  bool prefix = true;                                  // names "transformer.h.0…" (false: "h.0…")
  bool untied = false;                                 // also write lm_head.weight, a copy of wte.weight
  bool gpt2_affine = false;  // LayerNorm gains 1, shifts and biases 0, exactly as GPT-2 starts
  std::function<void(size_t tensors_done, size_t tensors_total)> progress = nullptr;  // may be empty
};

// The values of one parameter (its name without the prefix, e.g. "h.0.attn.c_proj.weight"),
// in the file's layout and before rounding to the file's dtype.
std::vector<float> random_values(const Config& c, const RandomOptions& o, const std::string& name, int64_t n);

// Writes the file; the config goes into __metadata__ (n_layer, n_head, n_embd, vocab,
// n_ctx as decimal strings) with the seed and the init. Refuses an existing file unless
// `overwrite`. Throws safetensors::FormatError or std::invalid_argument.
void write_random_weights(const std::string& path, const Config& c, const RandomOptions& o, bool overwrite = false);

}  // namespace gpt2
