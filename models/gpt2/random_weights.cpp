#include "random_weights.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "declare/dtype.h"
#include "declare/rng.h"
#include "weights.h"

namespace gpt2 {

namespace {

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// FNV-1a: a stable number for a tensor's name, mixed into the seed.
uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Normal(mean, std²) by the Box-Muller transform (two uniforms -> one normal).
float normal(wb::Rng& rng, double mean, double std) {
  const double u1 = 1.0 - rng.uniform(0.0, 1.0);  // (0, 1]: log(u1) is finite
  const double u2 = rng.uniform(0.0, 1.0);
  return static_cast<float>(mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

}  // namespace

std::vector<float> random_values(const Config& c, const RandomOptions& o, const std::string& name, int64_t n) {
  const bool is_ln = name.find("ln_") != std::string::npos;
  const bool is_bias = ends_with(name, ".bias");
  double mean = 0.0, std = 0.02;  // matrices and embeddings
  if (ends_with(name, "c_proj.weight")) {
    std = 0.02 / std::sqrt(2.0 * c.n_layer);  // residual projections
  } else if (is_ln && !is_bias) {
    mean = 1.0, std = o.gpt2_affine ? 0.0 : 0.1;  // LayerNorm gain
  } else if (is_ln) {
    std = o.gpt2_affine ? 0.0 : 0.05;  // LayerNorm shift
  } else if (is_bias) {
    std = o.gpt2_affine ? 0.0 : 0.02;  // projection bias
  }
  wb::Rng rng(o.seed ^ name_hash(name));
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = std == 0.0 ? static_cast<float>(mean) : normal(rng, mean, std);
  return v;
}

void write_random_weights(const std::string& path, const Config& c, const RandomOptions& o, bool overwrite) {
  c.validate();
  if (o.dtype != safetensors::Dtype::F32 && o.dtype != safetensors::Dtype::F16 && o.dtype != safetensors::Dtype::BF16) {
    throw std::invalid_argument("random weights: dtype must be F32, F16 or BF16, not " +
                                std::string(safetensors::dtype_name(o.dtype)));
  }
  std::vector<safetensors::TensorSpec> specs;
  std::vector<std::string> value_names;  // the stream each tensor's values come from
  for (const ParamName& p : parameter_names(c, o.prefix)) {
    specs.push_back({p.name, o.dtype, p.file_shape});
    value_names.push_back(o.prefix ? p.name.substr(std::string("transformer.").size()) : p.name);
  }
  if (o.untied) {
    specs.push_back({"lm_head.weight", o.dtype, {c.vocab, c.n_embd}});
    value_names.push_back("wte.weight");  // the same values: a tied head, stored twice
  }
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"},
      {"n_layer", std::to_string(c.n_layer)},
      {"n_head", std::to_string(c.n_head)},
      {"n_embd", std::to_string(c.n_embd)},
      {"vocab", std::to_string(c.vocab)},
      {"n_ctx", std::to_string(c.n_ctx)},
      {"seed", std::to_string(o.seed)},
      {"init", o.gpt2_affine ? "gpt2" : "gpt2, random LayerNorm affine and biases"},
  };
  auto fill = [&](size_t i, std::span<std::byte> out) {
    const int64_t n = static_cast<int64_t>(out.size()) / safetensors::dtype_size(o.dtype);
    const std::vector<float> v = random_values(c, o, value_names[i], n);
    for (int64_t k = 0; k < n; ++k) {
      std::byte* dst = out.data() + k * safetensors::dtype_size(o.dtype);
      if (o.dtype == safetensors::Dtype::F32) {
        std::memcpy(dst, &v[static_cast<size_t>(k)], 4);
      } else if (o.dtype == safetensors::Dtype::BF16) {
        const uint16_t bits = wb::float_to_bf16(v[static_cast<size_t>(k)]).bits;
        std::memcpy(dst, &bits, 2);
      } else {
        const uint16_t bits = wb::float_to_half(v[static_cast<size_t>(k)]).bits;
        std::memcpy(dst, &bits, 2);
      }
    }
    if (o.progress) o.progress(i + 1, specs.size());
  };
  safetensors::write_streaming(path, specs, metadata, fill, overwrite);
}

}  // namespace gpt2
