#include "weights.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace gpt2 {

namespace {

constexpr std::string_view kPrefix = "transformer.";
constexpr std::string_view kLmHead = "lm_head.weight";

// One block's sublayers as the file names them, each with "<name>.weight" and "<name>.bias". A
// layer norm's (out_mult == 0) are vectors [in_mult * C]; a linear layer's weight is stored as
// [in, out] = [in_mult * C, out_mult * C] (a Conv1D's layout) and its bias as [out_mult * C].
struct Sublayer {
  const char* name;
  Tensor Layer::*weight;
  Tensor Layer::*bias;
  int in_mult, out_mult;
};
constexpr Sublayer kSublayers[] = {
    {"ln_1", &Layer::ln_1_w, &Layer::ln_1_b, 1, 0},
    {"attn.c_attn", &Layer::attn_w, &Layer::attn_b, 1, 3},
    {"attn.c_proj", &Layer::attn_proj_w, &Layer::attn_proj_b, 1, 1},
    {"ln_2", &Layer::ln_2_w, &Layer::ln_2_b, 1, 0},
    {"mlp.c_fc", &Layer::fc_w, &Layer::fc_b, 1, 4},
    {"mlp.c_proj", &Layer::fc_proj_w, &Layer::fc_proj_b, 4, 1},
};

// The parameters of one block in the file's order, each sublayer's weight then its bias: the
// name after "h.N.", where it goes, and its shape as above (a matrix when out_mult != 0).
struct LayerParam {
  std::string suffix;
  Tensor Layer::*member;
  int in_mult, out_mult;
};
const std::vector<LayerParam>& layer_params() {
  static const std::vector<LayerParam> params = [] {
    std::vector<LayerParam> out;
    for (const Sublayer& s : kSublayers) {
      out.push_back({std::string(s.name) + ".weight", s.weight, s.in_mult, s.out_mult});
      out.push_back({std::string(s.name) + ".bias", s.bias, s.out_mult != 0 ? s.out_mult : s.in_mult, 0});
    }
    return out;
  }();
  return params;
}

// Buffers, not parameters, that some exporters save per block: ignored.
constexpr std::string_view kIgnoredSuffixes[] = {"attn.bias", "attn.masked_bias"};

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw WeightsError(path + ": " + what); }

// "h.12.attn.c_attn.weight" -> 12 and "attn.c_attn.weight"; false when not of that form.
bool split_layer_name(std::string_view name, int* layer, std::string_view* suffix) {
  if (name.substr(0, 2) != "h.") return false;
  size_t i = 2;
  int n = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 7)
    n = n * 10 + (name[i++] - '0');  // h.0 .. h.99999
  if (i == 2 || i >= name.size() || name[i] != '.') return false;
  *layer = n;
  *suffix = name.substr(i + 1);
  return true;
}

// The file's tensors by their name without the prefix.
struct Index {
  std::map<std::string, const safetensors::TensorView*, std::less<>> params;  // "h.0.ln_1.weight" -> tensor
  const safetensors::TensorView* lm_head = nullptr;
  bool prefixed = false;  // the file spells its names "transformer.…"
  int n_layer = 0;        // 1 + the largest block index seen

  std::string file_name(std::string_view short_name) const {
    return (prefixed ? std::string(kPrefix) : std::string()) + std::string(short_name);
  }
};

Index build_index(const safetensors::File& file) {
  Index ix;
  std::map<std::string, std::string> spelled;  // short name -> the name as the file spells it
  for (const auto& t : file.tensors()) {
    if (t.name == kLmHead) {
      ix.lm_head = &t;
      continue;
    }
    std::string_view name = t.name;
    if (name.substr(0, kPrefix.size()) == kPrefix) {
      name.remove_prefix(kPrefix.size());
      ix.prefixed = true;
    }
    int layer = 0;
    std::string_view suffix;
    bool known = name == "wte.weight" || name == "wpe.weight" || name == "ln_f.weight" || name == "ln_f.bias";
    if (!known && split_layer_name(name, &layer, &suffix)) {
      bool ignored = false;
      for (auto s : kIgnoredSuffixes) ignored |= suffix == s;
      if (ignored) continue;
      for (const auto& p : layer_params()) known |= suffix == p.suffix;
      if (known) ix.n_layer = std::max(ix.n_layer, layer + 1);
    }
    if (!known) {
      fail(file.path(),
           "tensor '" + t.name +
               "' is not a GPT-2 parameter (expected wte, wpe, ln_f, h.N.{ln_1, attn.c_attn, attn.c_proj, "
               "ln_2, mlp.c_fc, mlp.c_proj}.{weight, bias}, with or without 'transformer.', and lm_head.weight)");
    }
    const auto [it, inserted] = spelled.emplace(std::string(name), t.name);
    if (!inserted) {
      fail(file.path(), "tensors '" + it->second + "' and '" + t.name +
                            "' are the same parameter (with and without the 'transformer.' prefix); keep one");
    }
    ix.params.emplace(std::string(name), &t);
  }
  return ix;
}

// Every tensor the config implies is present, has its shape, and nothing else is there.
void check_against(const safetensors::File& file, const Index& ix, const Config& c, const std::string& whose) {
  for (const ParamName& p : parameter_names(c, false)) {
    const auto it = ix.params.find(p.name);
    if (it == ix.params.end()) {
      fail(file.path(), "tensor '" + ix.file_name(p.name) + "' is missing (" + whose + " needs it, shape " +
                            safetensors::shape_string(p.file_shape) + ")");
    }
    if (it->second->shape != p.file_shape) {
      fail(file.path(), "tensor '" + it->second->name + "' has shape " + safetensors::shape_string(it->second->shape) +
                            ", but " + whose + " needs " + safetensors::shape_string(p.file_shape));
    }
  }
  const int64_t expected = static_cast<int64_t>(parameter_names(c, false).size());
  if (static_cast<int64_t>(ix.params.size()) != expected) {  // a block past the config's last
    for (const auto& [name, t] : ix.params) {
      int layer = 0;
      std::string_view suffix;
      if (split_layer_name(name, &layer, &suffix) && layer >= c.n_layer) {
        fail(file.path(), "tensor '" + t->name + "' belongs to block " + std::to_string(layer) + ", but " + whose +
                              " has " + std::to_string(c.n_layer) + " blocks");
      }
    }
  }
  if (ix.lm_head != nullptr && ix.lm_head->shape != std::vector<int64_t>{c.vocab, c.n_embd}) {
    fail(file.path(), "tensor 'lm_head.weight' has shape " + safetensors::shape_string(ix.lm_head->shape) +
                          ", but the LM head is tied to wte, shape " + safetensors::shape_string({c.vocab, c.n_embd}));
  }
}

// A size given as a decimal string (the format's metadata holds strings only).
int metadata_int(const safetensors::File& file, const std::string& key) {
  const std::string& s = file.metadata().at(key);
  try {
    size_t used = 0;
    const int v = std::stoi(s, &used);
    if (used == s.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  fail(file.path(), "__metadata__ \"" + key + "\" is '" + s + "', not a positive whole number");
}

// A source of sizes besides the shapes: {field, value}, and its name for messages.
struct SizeSource {
  std::string what;
  std::map<std::string, int> sizes;  // keys: n_layer n_head n_embd vocab n_ctx
};

std::vector<SizeSource> size_sources(const safetensors::File& file) {
  std::vector<SizeSource> out;
  SizeSource meta{"the file's __metadata__", {}};
  for (const char* key : {"n_layer", "n_head", "n_embd", "vocab", "n_ctx"}) {
    if (file.metadata().count(key)) meta.sizes[key] = metadata_int(file, key);
  }
  if (!meta.sizes.empty()) out.push_back(meta);

  namespace fs = std::filesystem;
  const fs::path cfg = fs::path(file.path()).parent_path() / "config.json";
  std::error_code ec;
  if (fs::exists(cfg, ec)) {
    std::ifstream in(cfg);
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
      fail(cfg.string(), std::string("not valid JSON (") + e.what() + "); it is read for n_head beside " + file.path());
    }
    SizeSource hf{cfg.string(), {}};
    // Hugging Face's GPT2Config spells the sizes this way.
    const std::pair<const char*, const char*> keys[] = {{"n_layer", "n_layer"},
                                                        {"n_head", "n_head"},
                                                        {"n_embd", "n_embd"},
                                                        {"vocab_size", "vocab"},
                                                        {"n_positions", "n_ctx"}};
    for (const auto& [json_key, field] : keys) {
      const auto v = j.is_object() ? j.find(json_key) : j.end();
      if (v != j.end() && v->is_number()) hf.sizes[field] = static_cast<int>(v->get<double>());
    }
    if (!hf.sizes.empty()) out.push_back(hf);
  }
  return out;
}

}  // namespace

// --- Tensor ---------------------------------------------------------------------------------

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float Tensor::at(int64_t i) const {
  return dtype == wb::DType::F32 ? f32[static_cast<size_t>(i)] : wb::bf16_to_float(bf16[static_cast<size_t>(i)]);
}

// --- names and config -------------------------------------------------------------------------

std::vector<ParamName> parameter_names(const Config& c, bool prefix) {
  const std::string p = prefix ? std::string(kPrefix) : "";
  const int64_t C = c.n_embd;
  std::vector<ParamName> out;
  out.push_back({p + "wte.weight", {c.vocab, C}});
  out.push_back({p + "wpe.weight", {c.n_ctx, C}});
  for (int l = 0; l < c.n_layer; ++l) {
    for (const auto& lp : layer_params()) {
      std::vector<int64_t> shape = {lp.in_mult * C};
      if (lp.out_mult != 0) shape.push_back(lp.out_mult * C);
      out.push_back({p + "h." + std::to_string(l) + "." + lp.suffix, shape});
    }
  }
  out.push_back({p + "ln_f.weight", {C}});
  out.push_back({p + "ln_f.bias", {C}});
  return out;
}

namespace {

Config resolve_config(const safetensors::File& file, const Index& ix, int n_head_option, const Config* expect) {
  const std::string& path = file.path();
  Config c;
  if (expect != nullptr) {
    c = *expect;
  } else {
    // V and C from wte, P from wpe, L from the block indices.
    const auto wte = ix.params.find("wte.weight");
    const auto wpe = ix.params.find("wpe.weight");
    if (wte == ix.params.end()) fail(path, "tensor '" + ix.file_name("wte.weight") + "' is missing");
    if (wpe == ix.params.end()) fail(path, "tensor '" + ix.file_name("wpe.weight") + "' is missing");
    const auto& ws = wte->second->shape;
    const auto& ps = wpe->second->shape;
    if (ws.size() != 2 || ws[0] < 1 || ws[1] < 1) {
      fail(path, "tensor '" + wte->second->name + "' has shape " + safetensors::shape_string(ws) +
                     "; the token embedding is (vocab, n_embd)");
    }
    if (ps.size() != 2 || ps[0] < 1 || ps[1] != ws[1]) {
      fail(path, "tensor '" + wpe->second->name + "' has shape " + safetensors::shape_string(ps) +
                     "; the position embedding is (n_ctx, n_embd) with n_embd = " + std::to_string(ws[1]) +
                     " as in wte");
    }
    if (ix.n_layer == 0)
      fail(path, "no transformer block: no tensor named " + ix.file_name("h.0.ln_1.weight") + " or the like");
    c.vocab = static_cast<int>(ws[0]);
    c.n_embd = static_cast<int>(ws[1]);
    c.n_ctx = static_cast<int>(ps[0]);
    c.n_layer = ix.n_layer;
  }

  // n_head: the option, the file's metadata, config.json beside it, or a preset's.
  const std::vector<SizeSource> sources = size_sources(file);
  if (expect == nullptr) {
    c.n_head = n_head_option;
    for (const auto& s : sources) {
      if (c.n_head == 0 && s.sizes.count("n_head")) c.n_head = s.sizes.at("n_head");
    }
    if (c.n_head == 0) c.n_head = preset_n_head_for(c.n_embd);
    if (c.n_head == 0) {
      fail(path,
           "n_head is not in the file's __metadata__, there is no config.json beside it, and no GPT-2 preset has "
           "n_embd = " +
               std::to_string(c.n_embd) +
               "; the shapes cannot tell the number of heads: give it (e.g. --n-head=N) or add \"n_head\" to "
               "__metadata__");
    }
  } else if (n_head_option > 0 && n_head_option != c.n_head) {
    fail(path, "n_head " + std::to_string(n_head_option) + " was given, but the expected config has " +
                   std::to_string(c.n_head));
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    fail(path, e.what());
  }

  // The tensors first, so a mismatch names a tensor and its shape; then every other
  // statement of the sizes must agree.
  check_against(
      file, ix, c,
      expect ? "the expected config (" + c.describe() + ")" : "the config read from the shapes (" + c.describe() + ")");
  const std::pair<const char*, int> fields[] = {
      {"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_embd", c.n_embd}, {"vocab", c.vocab}, {"n_ctx", c.n_ctx}};
  for (const auto& s : sources) {
    for (const auto& [field, value] : fields) {
      if (s.sizes.count(field) && s.sizes.at(field) != value) {
        fail(path, s.what + " says " + field + " = " + std::to_string(s.sizes.at(field)) + ", but " +
                       (expect ? "the expected config has " : "the tensors and options give ") + std::to_string(value));
      }
    }
  }
  return c;
}

// Element i of a stored tensor as float.
float stored_element(const safetensors::TensorView& t, int64_t i) {
  const std::byte* p = t.data.data();
  switch (t.dtype) {
    case safetensors::Dtype::F32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case safetensors::Dtype::F16: {
      wb::Half h;
      std::memcpy(&h.bits, p + 2 * i, 2);
      return wb::half_to_float(h);
    }
    case safetensors::Dtype::BF16: {
      wb::BFloat16 b;
      std::memcpy(&b.bits, p + 2 * i, 2);
      return wb::bf16_to_float(b);
    }
    default:
      return NAN;  // refused before conversion starts
  }
}

// The stored tensor in the compute dtype; a stored [in, out] Conv1D weight comes out [out, in].
Tensor convert(const std::string& path, const safetensors::TensorView& t, wb::DType to, bool transpose) {
  Tensor out;
  out.dtype = to;
  out.shape = transpose ? std::vector<int64_t>{t.shape[1], t.shape[0]} : t.shape;
  const int64_t n = t.numel();
  const int64_t rows = transpose ? t.shape[0] : 1, cols = transpose ? t.shape[1] : n;  // stored (in, out)
  if (to == wb::DType::F32)
    out.f32.resize(static_cast<size_t>(n));
  else
    out.bf16.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t src = r * cols + c;
      const int64_t dst = transpose ? c * rows + r : src;  // out[c][r] = stored[r][c]
      const float v = stored_element(t, src);
      if (!std::isfinite(v)) {
        fail(path, "tensor '" + t.name + "' holds " + std::to_string(v) + " at element " + std::to_string(src) +
                       "; weights must be finite");
      }
      if (to == wb::DType::F32)
        out.f32[static_cast<size_t>(dst)] = v;
      else
        out.bf16[static_cast<size_t>(dst)] = wb::float_to_bf16(v);  // round to nearest even
    }
  }
  return out;
}

}  // namespace

Config read_config(const safetensors::File& file, int n_head) {
  return resolve_config(file, build_index(file), n_head, nullptr);
}

Weights load_weights(const safetensors::File& file, const LoadOptions& options) {
  const std::string& path = file.path();
  if (options.dtype != wb::DType::F32 && options.dtype != wb::DType::BF16) {
    fail(path, "compute dtype " + std::string(wb::dtype_name(options.dtype)) + " is not supported; use F32 or BF16");
  }
  const Index ix = build_index(file);
  Weights w;
  w.config = resolve_config(file, ix, options.n_head, options.expect);
  w.dtype = options.dtype;
  w.layers.resize(static_cast<size_t>(w.config.n_layer));

  // Every parameter in F32, F16 or BF16.
  int64_t total = 0;
  std::vector<const safetensors::TensorView*> stored;
  for (const auto& [name, t] : ix.params) stored.push_back(t);
  if (ix.lm_head != nullptr) stored.push_back(ix.lm_head);
  for (const safetensors::TensorView* t : stored) {
    if (t->dtype != safetensors::Dtype::F32 && t->dtype != safetensors::Dtype::F16 &&
        t->dtype != safetensors::Dtype::BF16) {
      fail(path, "tensor '" + t->name + "' is " + std::string(safetensors::dtype_name(t->dtype)) +
                     "; GPT-2 weights must be F32, F16 or BF16");
    }
  }
  for (const auto& [name, t] : ix.params) total += static_cast<int64_t>(t->data.size());

  int done_tensors = 0;
  int64_t done_bytes = 0;
  auto load_one = [&](const std::string& name, Tensor* dst, bool transpose) {
    const safetensors::TensorView* t = ix.params.at(name);
    *dst = convert(path, *t, options.dtype, transpose);
    done_bytes += static_cast<int64_t>(t->data.size());
    if (options.progress) {
      options.progress({done_bytes, total, ++done_tensors, static_cast<int>(ix.params.size()), t->name});
    }
  };
  load_one("wte.weight", &w.wte, false);
  load_one("wpe.weight", &w.wpe, false);
  for (int l = 0; l < w.config.n_layer; ++l) {
    for (const auto& lp : layer_params()) {
      load_one("h." + std::to_string(l) + "." + lp.suffix, &(w.layers[static_cast<size_t>(l)].*lp.member),
               lp.out_mult != 0);  // matrices are Conv1D weights: transposed to [out, in]
    }
  }
  load_one("ln_f.weight", &w.ln_f_w, false);
  load_one("ln_f.bias", &w.ln_f_b, false);

  // A separate lm_head must be a copy of wte: this model ties the two.
  if (ix.lm_head != nullptr) {
    const safetensors::TensorView& wte = *ix.params.at("wte.weight");
    const auto& lm = *ix.lm_head;
    for (int64_t i = 0; i < wte.numel(); ++i) {
      const float a = stored_element(lm, i), b = stored_element(wte, i);
      if (!(a == b)) {
        fail(path, "tensor 'lm_head.weight' differs from '" + wte.name + "' at element " + std::to_string(i) + " (" +
                       std::to_string(a) + " vs " + std::to_string(b) +
                       "): this model ties the LM head to the token embedding, so the two must be equal");
      }
    }
  }
  return w;
}

Weights load_weights(const std::string& path, const LoadOptions& options) {
  try {
    const safetensors::File file = safetensors::File::open(path);
    return load_weights(file, options);
  } catch (const safetensors::FormatError& e) {
    throw WeightsError(e.what());
  }
}

}  // namespace gpt2
