// GPT-2's sizes. Presets match Hugging Face's gpt2, gpt2-medium, gpt2-large and gpt2-xl
// configurations (vocabulary 50257, context 1024, LayerNorm epsilon 1e-5, GELU tanh).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace gpt2 {

struct Config {
  int n_layer = 0;  // L: transformer blocks
  int n_head = 0;   // H: attention heads; n_embd / n_head is the head size D
  int n_embd = 0;   // C: channels of the residual stream
  int vocab = 0;    // V: token ids 0 .. V-1
  int n_ctx = 0;    // P: positions (the longest sequence)

  int head_dim() const { return n_embd / n_head; }
  int64_t n_params() const;      // embeddings, blocks, final LayerNorm (the LM head is tied to wte)
  std::string describe() const;  // "L=12 C=768 H=12 V=50257 P=1024 (124.4M parameters)"
  void validate() const;         // throws std::invalid_argument naming the field that is wrong
  bool operator==(const Config&) const = default;
};

constexpr double kLayerNormEps = 1e-5;  // GPT-2's layer_norm_epsilon

// "tiny" (L=2 C=64 H=4 V=251 P=64: for host tests), "124M", "355M", "774M", "1.5B", or
// "L=..,C=..,H=..,V=..,P=.." (all five). Throws std::invalid_argument saying what is
// accepted.
Config parse_config(std::string_view text);
Config preset(std::string_view name);  // one of the named presets above

// The head count of the named preset with this width (768 -> 12, 1024 -> 16, 1280 -> 20,
// 1600 -> 25); 0 when no preset has it.
int preset_n_head_for(int n_embd);

}  // namespace gpt2
