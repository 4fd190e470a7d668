#include "config.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "runtime/cli.h"

namespace gpt2 {

namespace {

struct Named {
  std::string_view name;
  Config config;
};
// {n_layer, n_head, n_embd, vocab, n_ctx}
const Named kPresets[] = {
    {"tiny", {2, 4, 64, 251, 64}},  // prime vocabulary: no size is a multiple of a tile
    {"124M", {12, 12, 768, 50257, 1024}},  {"355M", {24, 16, 1024, 50257, 1024}},
    {"774M", {36, 20, 1280, 50257, 1024}}, {"1.5B", {48, 25, 1600, 50257, 1024}},
};

constexpr const char* kAccepted =
    "tiny, 124M, 355M, 774M, 1.5B, or L=..,C=..,H=..,V=..,P=.. (layers, channels, "
    "heads, vocabulary, context)";

}  // namespace

int64_t Config::n_params() const {
  const int64_t C = n_embd;
  const int64_t per_layer = 2 * C                // ln_1
                            + C * 3 * C + 3 * C  // c_attn
                            + C * C + C          // attn.c_proj
                            + 2 * C              // ln_2
                            + C * 4 * C + 4 * C  // c_fc
                            + 4 * C * C + C;     // mlp.c_proj
  return int64_t{vocab} * C + int64_t{n_ctx} * C + n_layer * per_layer + 2 * C;
}

std::string Config::describe() const {
  char buf[160];
  const int64_t n = n_params();
  if (n < 1'000'000) {
    std::snprintf(buf, sizeof buf, "L=%d C=%d H=%d V=%d P=%d (%lld parameters)", n_layer, n_embd, n_head, vocab, n_ctx,
                  static_cast<long long>(n));
  } else {
    std::snprintf(buf, sizeof buf, "L=%d C=%d H=%d V=%d P=%d (%.1fM parameters)", n_layer, n_embd, n_head, vocab, n_ctx,
                  static_cast<double>(n) / 1e6);
  }
  return buf;
}

void Config::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("GPT-2 config: " + what);
  };
  need(n_layer >= 1, "n_layer (L) must be at least 1, not " + std::to_string(n_layer));
  need(n_embd >= 1, "n_embd (C) must be at least 1, not " + std::to_string(n_embd));
  need(n_head >= 1, "n_head (H) must be at least 1, not " + std::to_string(n_head));
  need(vocab >= 1, "vocab (V) must be at least 1, not " + std::to_string(vocab));
  need(n_ctx >= 1, "n_ctx (P) must be at least 1, not " + std::to_string(n_ctx));
  need(n_embd % n_head == 0, "n_embd (C) = " + std::to_string(n_embd) + " is not a multiple of n_head (H) = " +
                                 std::to_string(n_head) + ": heads split the channels evenly");
  // The largest tensors (c_fc, wte) far from overflowing a 64-bit byte count.
  need(int64_t{n_embd} * 4 * n_embd < (int64_t{1} << 40) && int64_t{vocab} * n_embd < (int64_t{1} << 40),
       "sizes too large (" + describe() + ")");
}

Config preset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (p.name == name) return p.config;
  }
  throw std::invalid_argument("unknown GPT-2 config '" + std::string(name) + "'; give " + kAccepted);
}

int preset_n_head_for(int n_embd) {
  for (const auto& p : kPresets) {
    if (p.name != "tiny" && p.config.n_embd == n_embd) return p.config.n_head;
  }
  return 0;
}

Config parse_config(std::string_view text) {
  if (text.find('=') == std::string_view::npos) return preset(text);
  // "L=2,C=64,H=4,V=251,P=64": each of the five keys exactly once.
  Config c;
  int* fields[] = {&c.n_layer, &c.n_embd, &c.n_head, &c.vocab, &c.n_ctx};
  const char keys[] = {'L', 'C', 'H', 'V', 'P'};
  bool seen[5] = {};
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    int k = -1;
    for (int i = 0; i < 5; ++i) {
      if (eq == 1 && item[0] == keys[i]) k = i;
    }
    if (k < 0) {
      throw std::invalid_argument("GPT-2 config '" + std::string(text) + "': '" + std::string(item) +
                                  "' is not one of L=, C=, H=, V=, P=; give " + kAccepted);
    }
    if (seen[k]) throw std::invalid_argument("GPT-2 config '" + std::string(text) + "': " + keys[k] + " given twice");
    seen[k] = true;
    try {
      *fields[k] = static_cast<int>(wb::parse_int(std::string(1, keys[k]), std::string(item.substr(2)), 1, 1 << 24));
    } catch (const wb::UsageError& e) {
      throw std::invalid_argument("GPT-2 config '" + std::string(text) + "': " + e.what());
    }
    start = comma + 1;
  }
  for (int i = 0; i < 5; ++i) {
    if (!seen[i]) {
      throw std::invalid_argument("GPT-2 config '" + std::string(text) + "': " + keys[i] +
                                  "= is missing; give all of L=, C=, H=, V=, P=");
    }
  }
  c.validate();
  return c;
}

}  // namespace gpt2
