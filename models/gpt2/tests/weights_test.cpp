// The GPT-2 weight loader: Hugging Face names, the config read from the shapes, Conv1D
// weights transposed to [out, in], dtype conversion, and every wrong file refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "cpu_forward.h"
#include "random_weights.h"
#include "test_files.h"
#include "weights.h"

namespace gpt2::test {
namespace {

using safetensors::Dtype;

class Weights_ : public ::testing::Test {
 protected:
  // A tiny model written once per test: transformer.-prefixed names, F32, seed 7.
  void SetUp() override {
    path_ = tiny("tiny.safetensors", [](RandomOptions&) {});
  }
  // Another tiny model, seed 7, with `change` made to the options: written as `name`.
  std::string tiny(const std::string& name, const std::function<void(RandomOptions&)>& change) {
    RandomOptions o;
    o.seed = 7;
    change(o);
    const std::string p = dir_.file(name);
    write_random_weights(p, preset("tiny"), o);
    return p;
  }
  // The tiny file rewritten with a change.
  std::string altered(const std::function<void(Contents&)>& change) {
    Contents c = read_contents(path_);
    change(c);
    const std::string p = dir_.file("altered" + std::to_string(++n_altered_) + ".safetensors");
    write_contents(p, c);
    return p;
  }
  TempDir dir_;
  std::string path_;
  int n_altered_ = 0;
};

float stored_f32(const safetensors::TensorView& t, int64_t i) {
  float v;
  std::memcpy(&v, t.data.data() + 4 * i, 4);
  return v;
}

// max |x·W_stored + b  -  linear(x, W_loaded, b)| for a stored Conv1D weight (in, out) and its
// loaded form: 0 when the loader transposed it, large when it did not.
double linear_error(const safetensors::TensorView& stored, const Tensor& loaded) {
  const int64_t in = stored.shape[0], out = stored.shape[1];
  std::vector<double> x(in), w(out * in), b(out), y(out);
  for (int64_t i = 0; i < in; ++i) x[i] = std::sin(0.7 * i + 0.3);  // an input with no symmetry
  for (int64_t o = 0; o < out; ++o) b[o] = 0.01 * o;
  for (int64_t i = 0; i < out * in; ++i) w[i] = loaded.at(i);
  cpu::linear(x, w, b, y, 1, in, out);
  double worst = 0;
  for (int64_t o = 0; o < out; ++o) {
    double ref = b[o];
    for (int64_t i = 0; i < in; ++i) ref += x[i] * stored_f32(stored, i * out + o);  // y = x · W, W (in, out)
    worst = std::max(worst, std::fabs(ref - y[o]));
  }
  return worst;
}

TEST_F(Weights_, TinyLoadsWithItsConfigFromShapesAndMetadata) {
  const Weights w = load_weights(path_);
  EXPECT_EQ(w.config, preset("tiny"));
  EXPECT_EQ(w.layers.size(), 2u);
  EXPECT_EQ(w.wte.shape, (std::vector<int64_t>{251, 64}));
  EXPECT_EQ(w.wpe.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(w.layers[1].attn_w.shape, (std::vector<int64_t>{192, 64}));     // [out, in]
  EXPECT_EQ(w.layers[1].fc_proj_w.shape, (std::vector<int64_t>{64, 256}));  // [out, in]
  EXPECT_EQ(w.layers[1].fc_b.shape, (std::vector<int64_t>{256}));
  EXPECT_EQ(w.ln_f_b.numel(), 64);
  EXPECT_EQ(read_config(safetensors::File::open(path_)), preset("tiny"));
}

TEST_F(Weights_, InitFollowsGpt2WithRandomAffine) {
  const Weights w = load_weights(path_);
  auto stats = [](const Tensor& t) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < t.numel(); ++i) s += t.at(i), s2 += t.at(i) * t.at(i);
    const double mean = s / t.numel();
    return std::pair{mean, std::sqrt(s2 / t.numel() - mean * mean)};
  };
  EXPECT_NEAR(stats(w.wte).second, 0.02, 0.002);
  EXPECT_NEAR(stats(w.layers[0].fc_w).second, 0.02, 0.002);
  EXPECT_NEAR(stats(w.layers[0].fc_proj_w).second, 0.02 / std::sqrt(4.0), 0.001);  // 1/sqrt(2·n_layer)
  EXPECT_NEAR(stats(w.layers[0].ln_1_w).first, 1.0, 0.05);
  EXPECT_GT(stats(w.layers[0].ln_1_w).second, 0.05);  // not all ones
  EXPECT_GT(stats(w.layers[0].attn_b).second, 0.01);  // not all zeros

  RandomOptions plain;
  plain.gpt2_affine = true;
  write_random_weights(dir_.file("plain.safetensors"), preset("tiny"), plain);
  const Weights p = load_weights(dir_.file("plain.safetensors"));
  EXPECT_EQ(stats(p.layers[1].ln_2_w), (std::pair{1.0, 0.0}));
  EXPECT_EQ(stats(p.layers[1].fc_proj_b), (std::pair{0.0, 0.0}));
}

TEST_F(Weights_, Conv1DWeightsAreTransposedToOutIn) {
  const auto file = safetensors::File::open(path_);
  const Weights w = load_weights(file);
  for (int l = 0; l < 2; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    const std::pair<const char*, const Tensor*> mats[] = {{"attn.c_attn.weight", &w.layers[l].attn_w},
                                                          {"attn.c_proj.weight", &w.layers[l].attn_proj_w},
                                                          {"mlp.c_fc.weight", &w.layers[l].fc_w},
                                                          {"mlp.c_proj.weight", &w.layers[l].fc_proj_w}};
    for (const auto& [name, loaded] : mats) {
      const safetensors::TensorView& t = *file.find(h + name);
      const int64_t in = t.shape[0], out = t.shape[1];
      ASSERT_EQ(loaded->shape, (std::vector<int64_t>{out, in})) << name;
      int wrong = 0;
      for (int64_t i = 0; i < in; ++i) {
        for (int64_t o = 0; o < out; ++o) wrong += loaded->at(o * in + i) != stored_f32(t, i * out + o);
      }
      EXPECT_EQ(wrong, 0) << h << name;
      EXPECT_LT(linear_error(t, *loaded), 1e-12) << h << name;
    }
  }
}

// The classic bug: taking the stored (in, out) bytes as if they were (out, in). For the square
// attn.c_proj the shapes cannot tell; the values can, and the check above sees it.
TEST_F(Weights_, TheTranspositionBugIsCaught) {
  const auto file = safetensors::File::open(path_);
  for (const char* name : {"transformer.h.0.attn.c_proj.weight", "transformer.h.1.mlp.c_fc.weight"}) {
    const safetensors::TensorView& t = *file.find(name);
    Tensor buggy;  // the stored bytes, untransposed, labelled (out, in)
    buggy.shape = {t.shape[1], t.shape[0]};
    for (int64_t i = 0; i < t.numel(); ++i) buggy.f32.push_back(stored_f32(t, i));
    EXPECT_GT(linear_error(t, buggy), 1e-3) << name << ": the check cannot tell a missing transpose";
  }
  // And the model's output changes with it.
  const Weights good = load_weights(file);
  Weights bad = good;
  for (auto& layer : bad.layers) {
    Tensor& m = layer.attn_proj_w;  // (C, C)
    const int64_t C = m.shape[0];
    for (int64_t r = 0; r < C; ++r) {
      for (int64_t c = r + 1; c < C; ++c) std::swap(m.f32[r * C + c], m.f32[c * C + r]);
    }
  }
  const std::vector<int32_t> tokens = {5, 17, 250, 3, 99};
  const auto a = cpu::forward(good, tokens), b = cpu::forward(bad, tokens);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += (a[i] - b[i]) * (a[i] - b[i]), norm += a[i] * a[i];
  EXPECT_GT(std::sqrt(diff / norm), 1e-3);
}

TEST_F(Weights_, NamesWithoutPrefixLoadTheSameValues) {
  const std::string bare = tiny("bare.safetensors", [](RandomOptions& o) { o.prefix = false; });
  EXPECT_NE(safetensors::File::open(bare).find("h.0.ln_1.weight"), nullptr);
  const Weights a = load_weights(path_), b = load_weights(bare);
  EXPECT_EQ(a.wte.f32, b.wte.f32);
  EXPECT_EQ(a.layers[1].fc_proj_w.f32, b.layers[1].fc_proj_w.f32);
  EXPECT_EQ(a.ln_f_b.f32, b.ln_f_b.f32);
}

TEST_F(Weights_, HalfAndBfloat16FilesConvertOnLoad) {
  for (Dtype dt : {Dtype::F16, Dtype::BF16}) {
    RandomOptions o;
    o.seed = 7;
    o.dtype = dt;
    const std::string p = dir_.file(std::string(safetensors::dtype_name(dt)) + ".safetensors");
    write_random_weights(p, preset("tiny"), o);
    const Weights w32 = load_weights(p, {.dtype = wb::DType::F32});
    const Weights w16 = load_weights(p, {.dtype = wb::DType::BF16});
    const std::vector<float> v = random_values(preset("tiny"), o, "h.1.attn.c_attn.weight", 64 * 192);  // (in, out)
    int wrong = 0;
    for (int64_t i = 0; i < 64; ++i) {
      for (int64_t j = 0; j < 192; ++j) {
        const float x = v[i * 192 + j];
        const float stored =
            dt == Dtype::F16 ? wb::half_to_float(wb::float_to_half(x)) : wb::bf16_to_float(wb::float_to_bf16(x));
        wrong += w32.layers[1].attn_w.at(j * 64 + i) != stored;
        wrong += w16.layers[1].attn_w.bf16[j * 64 + i].bits != wb::float_to_bf16(stored).bits;
      }
    }
    EXPECT_EQ(wrong, 0) << safetensors::dtype_name(dt);
    EXPECT_EQ(w16.dtype, wb::DType::BF16);
    EXPECT_TRUE(w16.wte.f32.empty());
    EXPECT_EQ(w16.wte.bytes(), 251u * 64 * 2);
  }
}

TEST_F(Weights_, Bfloat16ComputeRoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between the bf16 values 1 and 1 + 2^-7: it goes to the even one, 1.
  // 1 + 3·2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: it goes to 1 + 2^-6.
  const float in[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -(1.0f + 0x1p-8f)};
  const float want[] = {1.0f, 1.0f + 0x1p-6f, 1.0f + 0x1p-7f, -1.0f};
  const std::string p =
      altered([&](Contents& c) { std::memcpy(c.find("transformer.ln_f.bias")->data.data(), in, sizeof in); });
  const Weights w = load_weights(p, {.dtype = wb::DType::BF16});
  const Weights w32 = load_weights(p);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(w.ln_f_b.at(i), want[i]) << i;
    EXPECT_EQ(w32.ln_f_b.at(i), in[i]) << i;  // F32 keeps the value
  }
}

TEST_F(Weights_, MissingTensorIsNamed) {
  const std::string p = altered([](Contents& c) { c.remove("transformer.h.1.mlp.c_fc.bias"); });
  expect_error<WeightsError>([&] { load_weights(p); },
                             {p, "tensor 'transformer.h.1.mlp.c_fc.bias' is missing", "[256]"});
  const std::string q = altered([](Contents& c) { c.remove("transformer.wpe.weight"); });
  expect_error<WeightsError>([&] { load_weights(q); }, {"tensor 'transformer.wpe.weight' is missing"});
}

TEST_F(Weights_, ExtraTensorIsNamed) {
  for (const char* extra : {"transformer.h.0.attn.rotary", "transformer.h.0.ln_3.weight", "extra.scale",
                            "h.x.ln_1.weight", "transformer.lm_head.weight"}) {
    const std::string p = altered([&](Contents& c) {
      c.tensors.push_back({{extra, Dtype::F32, {2}}, std::vector<std::byte>(8, std::byte{0x3f})});
    });
    expect_error<WeightsError>([&] { load_weights(p); },
                               {p, std::string("tensor '") + extra + "' is not a GPT-2 parameter"});
  }
}

TEST_F(Weights_, KnownBuffersAreIgnored) {
  const std::string p = altered([](Contents& c) {
    c.tensors.push_back(
        {{"transformer.h.0.attn.bias", Dtype::U8, {1, 1, 64, 64}}, std::vector<std::byte>(64 * 64, std::byte{1})});
    c.tensors.push_back(
        {{"transformer.h.1.attn.masked_bias", Dtype::F32, {}}, std::vector<std::byte>(4, std::byte{0x40})});
  });
  const Weights w = load_weights(p);
  EXPECT_EQ(w.config, preset("tiny"));
  EXPECT_EQ(w.layers[0].attn_b.f32, load_weights(path_).layers[0].attn_b.f32);  // attn.bias is not c_attn.bias
}

TEST_F(Weights_, WrongShapeIsNamed) {
  // c_attn saved as (out, in), as nn.Linear would: the same bytes, the other shape.
  const std::string p = altered([](Contents& c) {
    c.find("transformer.h.0.attn.c_attn.weight")->spec.shape = {192, 64};
  });
  expect_error<WeightsError>([&] { load_weights(p); },
                             {p, "tensor 'transformer.h.0.attn.c_attn.weight' has shape [192, 64]", "needs [64, 192]"});
  const std::string q = altered([](Contents& c) {
    auto* t = c.find("transformer.wpe.weight");  // positions of a different width
    t->spec.shape = {128, 32};
  });
  expect_error<WeightsError>([&] { load_weights(q); }, {"tensor 'transformer.wpe.weight' has shape [128, 32]"});
}

TEST_F(Weights_, WrongDtypeIsNamed) {
  const std::string p = altered([](Contents& c) { c.find("transformer.ln_f.bias")->spec.dtype = Dtype::I32; });
  expect_error<WeightsError>([&] { load_weights(p); },
                             {p, "tensor 'transformer.ln_f.bias' is I32", "F32, F16 or BF16"});
}

TEST_F(Weights_, NonFiniteWeightIsNamed) {
  const std::string p = altered([](Contents& c) {
    const float nan = NAN;
    std::memcpy(c.find("transformer.h.1.ln_2.weight")->data.data() + 4 * 5, &nan, 4);
  });
  expect_error<WeightsError>([&] { load_weights(p); }, {"tensor 'transformer.h.1.ln_2.weight' holds nan at element 5"});
}

TEST_F(Weights_, LmHeadMustBeACopyOfWte) {
  const std::string untied = tiny("untied.safetensors", [](RandomOptions& o) { o.untied = true; });
  EXPECT_NE(safetensors::File::open(untied).find("lm_head.weight"), nullptr);
  EXPECT_EQ(load_weights(untied).wte.f32, load_weights(path_).wte.f32);

  Contents c = read_contents(untied);
  c.find("lm_head.weight")->data[4 * 1000 + 3] ^= std::byte{0x01};  // element 1000 differs in one bit
  const std::string p = dir_.file("lm_head_differs.safetensors");
  write_contents(p, c);
  expect_error<WeightsError>([&] { load_weights(p); },
                             {"'lm_head.weight' differs from 'transformer.wte.weight' at element 1000"});

  c = read_contents(untied);
  c.find("lm_head.weight")->spec.shape = {64, 251};
  const std::string q = dir_.file("lm_head_shape.safetensors");
  write_contents(q, c);
  expect_error<WeightsError>([&] { load_weights(q); }, {"'lm_head.weight' has shape [64, 251]", "[251, 64]"});
}

TEST_F(Weights_, TheSameParameterTwiceIsRefused) {
  const std::string p = altered([](Contents& c) {
    auto copy = *c.find("transformer.wte.weight");
    copy.spec.name = "wte.weight";
    c.tensors.push_back(copy);
  });
  expect_error<WeightsError>([&] { load_weights(p); },
                             {"'transformer.wte.weight' and 'wte.weight' are the same parameter"});
}

TEST_F(Weights_, HeadCountComesFromMetadataOptionConfigJsonOrPreset) {
  // No n_head anywhere, and no preset has n_embd 64: refused, saying how to fix it.
  const std::string p = altered([](Contents& c) { c.metadata.clear(); });
  expect_error<WeightsError>([&] { load_weights(p); }, {p, "n_head", "--n-head=N", "__metadata__"});
  EXPECT_EQ(load_weights(p, {.n_head = 8}).config.n_head, 8);
  expect_error<WeightsError>([&] { load_weights(p, {.n_head = 6}); }, {"not a multiple of n_head"});

  // A Hugging Face folder: config.json beside the weights.
  TempDir hf;
  std::filesystem::copy_file(p, hf.file("model.safetensors"));
  {
    std::ofstream(hf.file("config.json")) << R"({"model_type": "gpt2", "n_head": 16, "n_layer": 2, "n_embd": 64,
                                               "vocab_size": 251, "n_positions": 64})";
  }
  EXPECT_EQ(load_weights(hf.file("model.safetensors")).config.n_head, 16);
  { std::ofstream(hf.file("config.json")) << R"({"n_head": 4, "n_layer": 3})"; }
  expect_error<WeightsError>([&] { load_weights(hf.file("model.safetensors")); },
                             {"config.json says n_layer = 3", "2"});
  { std::ofstream(hf.file("config.json")) << R"({"n_head": 4,)"; }
  expect_error<WeightsError>([&] { load_weights(hf.file("model.safetensors")); }, {"config.json", "not valid JSON"});

  // The width of a named preset: its head count (124M's 768 channels: 12 heads).
  Config c = parse_config("L=1,C=768,H=12,V=8,P=4");
  RandomOptions o;
  o.dtype = Dtype::BF16;
  const std::string wide = dir_.file("wide.safetensors");
  write_random_weights(wide, c, o);
  Contents contents = read_contents(wide);
  contents.metadata.clear();
  write_contents(wide, contents);
  EXPECT_EQ(load_weights(wide).config, c);
}

TEST_F(Weights_, MetadataThatDisagreesWithTheShapesIsRefused) {
  const std::string p = altered([](Contents& c) { c.metadata["n_layer"] = "3"; });
  expect_error<WeightsError>([&] { load_weights(p); }, {p, "__metadata__ says n_layer = 3", "give 2"});
  const std::string q = altered([](Contents& c) { c.metadata["n_head"] = "5"; });
  expect_error<WeightsError>([&] { load_weights(q); }, {"n_embd (C) = 64 is not a multiple of n_head (H) = 5"});
  const std::string r = altered([](Contents& c) { c.metadata["n_head"] = "four"; });
  expect_error<WeightsError>([&] { load_weights(r); }, {"__metadata__ \"n_head\" is 'four'"});
}

TEST_F(Weights_, AnExpectedConfigMustMatchTheFile) {
  const Config shorter = parse_config("L=2,C=64,H=4,V=251,P=32");
  expect_error<WeightsError>([&] { load_weights(path_, {.expect = &shorter}); },
                             {"tensor 'transformer.wpe.weight' has shape [64, 64]", "expected config", "[32, 64]"});
  const Config one_layer = parse_config("L=1,C=64,H=4,V=251,P=64");
  expect_error<WeightsError>([&] { load_weights(path_, {.expect = &one_layer}); },
                             {"belongs to block 1", "has 1 blocks"});
  const Config three = parse_config("L=3,C=64,H=4,V=251,P=64");
  expect_error<WeightsError>([&] { load_weights(path_, {.expect = &three}); },
                             {"'transformer.h.2.ln_1.weight' is missing"});
  const Config gpt2 = preset("124M");
  expect_error<WeightsError>(
      [&] { load_weights(path_, {.expect = &gpt2}); },
      {"tensor 'transformer.wte.weight' has shape [251, 64], but the expected config", "needs [50257, 768]"});
  const Config tiny = preset("tiny");
  EXPECT_EQ(load_weights(path_, {.expect = &tiny}).config, tiny);
}

TEST_F(Weights_, ProgressReportsEveryTensor) {
  std::vector<LoadProgress> seen;
  std::vector<std::string> names;
  LoadOptions o;
  o.progress = [&](const LoadProgress& p) {
    seen.push_back(p);
    names.emplace_back(p.tensor);
  };
  load_weights(path_, o);
  const int n = 2 + 12 * 2 + 2;
  ASSERT_EQ(static_cast<int>(seen.size()), n);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].bytes_done, seen[i - 1].bytes_done);
  EXPECT_EQ(seen.back().bytes_done, seen.back().bytes_total);
  EXPECT_EQ(seen.back().tensors_done, n);
  EXPECT_EQ(seen.back().bytes_total, preset("tiny").n_params() * 4);
  EXPECT_EQ(names.front(), "transformer.wte.weight");
}

TEST_F(Weights_, BrokenFileErrorsComeAsWeightsErrors) {
  const std::string p = dir_.file("cut.safetensors");
  std::filesystem::copy_file(path_, p);
  std::filesystem::resize_file(p, std::filesystem::file_size(p) / 2);
  expect_error<WeightsError>([&] { load_weights(p); }, {p, "past the end of the data section"});
  expect_error<WeightsError>([&] { load_weights(path_, {.dtype = wb::DType::F16}); },
                             {"compute dtype fp16 is not supported"});
}

TEST(Config, PresetsMatchHuggingFaceGpt2) {
  EXPECT_EQ(preset("124M"), (Config{12, 12, 768, 50257, 1024}));
  EXPECT_EQ(preset("355M"), (Config{24, 16, 1024, 50257, 1024}));
  EXPECT_EQ(preset("774M"), (Config{36, 20, 1280, 50257, 1024}));
  EXPECT_EQ(preset("1.5B"), (Config{48, 25, 1600, 50257, 1024}));
  EXPECT_EQ(preset("124M").n_params(), 124439808);  // GPT-2 small's published count
  EXPECT_EQ(preset("tiny").head_dim(), 16);
  EXPECT_EQ(preset_n_head_for(1600), 25);
  EXPECT_EQ(preset_n_head_for(64), 0);
}

TEST(Config, ParsesAndRefusesByName) {
  EXPECT_EQ(parse_config("L=3,C=96,H=6,V=500,P=40"), (Config{3, 6, 96, 500, 40}));
  EXPECT_EQ(parse_config("P=40,V=500,H=6,C=96,L=3"), (Config{3, 6, 96, 500, 40}));
  expect_error<std::invalid_argument>([] { parse_config("huge"); }, {"unknown GPT-2 config 'huge'", "124M"});
  expect_error<std::invalid_argument>([] { parse_config("L=2,C=65,H=4,V=10,P=8"); },
                                      {"65 is not a multiple of n_head (H) = 4"});
  expect_error<std::invalid_argument>([] { parse_config("L=2,C=64,H=4,V=10"); }, {"P= is missing"});
  expect_error<std::invalid_argument>([] { parse_config("L=2,C=64,H=4,V=10,P=8,L=3"); }, {"L given twice"});
  expect_error<std::invalid_argument>([] { parse_config("L=2,C=6x4,H=4,V=10,P=8"); }, {"'6x4' is not a whole number"});
  expect_error<std::invalid_argument>([] { parse_config("L=0,C=64,H=4,V=10,P=8"); }, {"L: 0 is out of range"});
  expect_error<std::invalid_argument>([] { parse_config("L=2,C=64,Q=4,V=10,P=8"); }, {"'Q=4' is not one of"});
}

}  // namespace
}  // namespace gpt2::test
