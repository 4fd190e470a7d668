// gpt2_quantize: a GPT-2 safetensors file with its block matrices quantized to INT4 in groups of
// 128 along K (models/gpt2/quantize.h: an FP32 scale and a zero point per group, the codes
// packed in the GEMV's load order), the rest copied as it is.
//
//   build/<preset>/bin/gpt2_quantize --weights=model.safetensors --out=model-int4.safetensors [--force]
//
// For each layer's attn.c_attn, attn.c_proj, mlp.c_fc and mlp.c_proj weight (NAME), the file
// holds instead, in the model's [out, in] orientation (not Conv1D's [in, out]):
//   NAME.qweight  U8  [N, K / 2]   two 4-bit codes a byte, the layout of quantize.h
//   NAME.scales   F32 [N, G]       G = ceil(K / 128)
//   NAME.zeros    U8  [N, G]       0 .. 15
// and __metadata__ "quantized" = "int4", "int4_group" = "128", beside the input's metadata.
// (The GPU model quantizes on load with --int4 and reads BF16 files only.)
//
// Refused before any work, with exit status 2, a message saying what and how to fix, and no
// file written: a missing or bad flag, an input that is not a GPT-2 safetensors file, one that
// is already quantized, a model whose K (C or 4C) is not a multiple of 32, an --out that
// exists (without --force), is the input, or lies in a folder that does not exist. The file is
// written under a temporary name and renamed when complete (runtime/output_file.h).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "quantize.h"
#include "runtime/options.h"
#include "runtime/output_file.h"
#include "safetensors.h"
#include "tool_main.h"
#include "weights.h"

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Why `file` is already quantized ("" when it is not): its metadata says so, or it holds a
// tensor of a quantized layout.
std::string quantized_marker(const safetensors::File& file) {
  if (const auto it = file.metadata().find("quantized"); it != file.metadata().end()) {
    return "its __metadata__ says quantized = " + it->second;
  }
  for (const auto& t : file.tensors()) {
    if (ends_with(t.name, ".qweight") || ends_with(t.name, ".scales") || ends_with(t.name, ".zeros")) {
      return "it holds the quantized tensor '" + t.name + "'";
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::string in, out, format = "int4";
  bool force = false;
  CLI::App app("Write a GPT-2 safetensors file with its block matrices quantized to INT4 (groups of 128 along K).",
               "gpt2_quantize");
  wb::cli::conventions(app);
  app.add_option("--weights", in, "the GPT-2 safetensors file to quantize (required; F32, BF16 or F16)");
  app.add_option("--out", out, "the file to write (required; never replaced without --force)");
  app.add_option("--format", format, "int4 (the only one: 4-bit codes, groups of 128, asymmetric)")
      ->transform(wb::cli::one_of({"int4"}));
  app.add_flag("--force", force, "replace --out if it exists");
  return gpt2::run_tool(app, "gpt2_quantize", [&] {
    if (!wb::cli::parse(app, argc, argv)) return 0;
    if (in.empty()) throw wb::UsageError("--weights is required: the GPT-2 safetensors file to quantize");
    if (out.empty()) throw wb::UsageError("--out is required: the file to write (e.g. --out=model-int4.safetensors)");
    std::error_code ec;
    if (!fs::exists(in, ec)) throw wb::UsageError("--weights=" + in + ": no such file");
    if (fs::exists(out, ec) && fs::equivalent(in, out, ec)) {
      throw wb::UsageError("--out is --weights (" + out + "): write the quantized file beside it, under another name");
    }
    if (fs::exists(out, ec) && !force && !fs::is_directory(out, ec)) {
      throw wb::UsageError("--out: " + out + " already exists; add --force to replace it");
    }
    if (auto why = wb::output_path_problem(out)) throw wb::UsageError("--out=" + out + ": " + *why);

    std::optional<safetensors::File> file;
    gpt2::Config config;
    try {
      file.emplace(safetensors::File::open(in));
    } catch (const std::exception& e) {
      throw wb::UsageError("--weights: " + std::string(e.what()) + " (not a complete safetensors file)");
    }
    if (const std::string why = quantized_marker(*file); !why.empty()) {
      throw wb::UsageError("--weights=" + in + " is already quantized (" + why +
                           "); quantize the original BF16 or F32 file instead");
    }
    try {
      config = gpt2::read_config(*file);
    } catch (const std::exception& e) {
      throw wb::UsageError("--weights: " + std::string(e.what()) + " (not a GPT-2 safetensors file)");
    }
    // The shapes, before any work: K is C (c_attn, c_proj, c_fc) or 4C (mlp.c_proj).
    for (auto [k, what] : {std::pair{config.n_embd, "C"}, {4 * config.n_embd, "4C"}}) {
      const std::string why = gpt2::int4_shape_problem(config.n_embd, k, "--weights=" + in);
      if (!why.empty()) throw wb::UsageError(why + " (K = " + what + " of GPT-2 " + config.describe() + ")");
    }

    std::printf("quantizing %s: GPT-2 %s, block matrices to INT4 in groups of %lld\n", in.c_str(),
                config.describe().c_str(), static_cast<long long>(gpt2::kInt4Group));
    std::fflush(stdout);
    const gpt2::Weights w = gpt2::load_weights(*file, {.dtype = wb::DType::F32});
    // The quantized matrices by their file name (h.L.attn.c_attn.weight, with the file's prefix).
    std::map<std::string, gpt2::Int4Matrix> quantized;
    for (const auto& t : file->tensors()) {
      for (size_t l = 0; l < w.layers.size(); ++l) {
        const gpt2::Layer& layer = w.layers[l];
        const std::string h = "h." + std::to_string(l) + ".";
        for (auto [m, name] : {std::pair{&layer.attn_w, "attn.c_attn.weight"},
                               {&layer.attn_proj_w, "attn.c_proj.weight"},
                               {&layer.fc_w, "mlp.c_fc.weight"},
                               {&layer.fc_proj_w, "mlp.c_proj.weight"}}) {
          if (t.name == h + name || ends_with(t.name, "." + h + name)) {
            quantized.emplace(t.name, gpt2::quantize_int4(*m, t.name));  // QuantizeError names a NaN's row
          }
        }
      }
    }
    // The output's tensors, in the input's order, each quantized matrix as its three.
    std::vector<safetensors::TensorSpec> specs;
    std::vector<std::pair<const safetensors::TensorView*, const std::vector<uint8_t>*>> sources;
    std::vector<const std::vector<float>*> float_sources;
    for (const auto& t : file->tensors()) {
      const auto it = quantized.find(t.name);
      if (it == quantized.end()) {
        specs.push_back({t.name, t.dtype, t.shape});
        sources.push_back({&t, nullptr});
        float_sources.push_back(nullptr);
        continue;
      }
      const gpt2::Int4Matrix& m = it->second;
      const int64_t N = m.rows, K = m.cols, G = m.groups();
      specs.push_back({t.name + ".qweight", safetensors::Dtype::U8, {N, K / 2}});
      sources.push_back({nullptr, &m.packed});
      float_sources.push_back(nullptr);
      specs.push_back({t.name + ".scales", safetensors::Dtype::F32, {N, G}});
      sources.push_back({nullptr, nullptr});
      float_sources.push_back(&m.scale);
      specs.push_back({t.name + ".zeros", safetensors::Dtype::U8, {N, G}});
      sources.push_back({nullptr, &m.zero});
      float_sources.push_back(nullptr);
    }
    std::map<std::string, std::string> metadata = file->metadata();
    metadata["quantized"] = "int4";
    metadata["int4_group"] = std::to_string(gpt2::kInt4Group);
    metadata["int4_layout"] = "models/gpt2/quantize.h (Int4Matrix)";
    safetensors::write_streaming(
        out, specs, metadata,
        [&](size_t i, std::span<std::byte> dst) {
          if (const auto* view = sources[i].first) {
            std::memcpy(dst.data(), view->data.data(), dst.size());
          } else if (const auto* bytes = sources[i].second) {
            std::memcpy(dst.data(), bytes->data(), dst.size());
          } else {
            std::memcpy(dst.data(), float_sources[i]->data(), dst.size());
          }
        },
        force);
    std::printf("wrote %s (%lld bytes; %zu matrices quantized)\n", out.c_str(),
                static_cast<long long>(fs::file_size(out)), quantized.size());
    return 0;
  });
}
