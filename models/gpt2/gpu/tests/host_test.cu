// Host tests of the GPU model's host parts: the kernel composition (--kernels, --use) and the
// tool's arguments. No GPU needed.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "ch09.cuh"
#include "runtime/cli.h"
#include "model.h"
#include "quantize.h"
#include "tool_args.h"
#include "declare/op.cuh"

namespace gpt2 {
namespace {

TEST(Kernels, AllAndPerOpChoice) {
  const Kernels k = Kernels::parse("solution", "layernorm:student,attention:library");
  EXPECT_EQ(k.layernorm, Who::Student);
  EXPECT_EQ(k.attention, Who::Library);
  EXPECT_EQ(k.gemm, Who::Solution);
  EXPECT_EQ(k.gemv, Who::Solution);
  const Kernels lib = Kernels::parse("library");
  EXPECT_EQ(lib.gemm, Who::Library);
  EXPECT_EQ(lib.block, Who::Solution) << "host code has no library form";
  EXPECT_EQ(lib.graph, Who::Solution);
  EXPECT_NE(k.describe().find("layernorm:student"), std::string::npos);
}

TEST(Kernels, RefusesWithTheBadPieceNamed) {
  auto message = [](std::string_view kernels, std::string_view use) {
    try {
      Kernels::parse(kernels, use);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("solutions", "").find("'solutions'"), std::string::npos);
  EXPECT_NE(message("solution", "layernorm").find("op:who"), std::string::npos);
  EXPECT_NE(message("solution", "softmax:student").find("'softmax' is not an op"), std::string::npos);
  EXPECT_NE(message("solution", "gemm:mine").find("--use=gemm"), std::string::npos);
  EXPECT_NE(message("solution", "graph:library").find("no library form"), std::string::npos);
}

// The model finds kernels through the harness's registry, which checks every linked variant
// against its op's spec: a program that links a chapter's launchers without its specs fails
// here, on any machine, instead of at the model's first GPU run.
TEST(Registry, EveryVariantTheModelLinksHasItsSpec) {
  const auto& variants = wb::all_variants();  // throws, naming the variant, if a spec is missing
  bool topk_reference = false;
  for (const wb::Variant& v : variants) topk_reference |= v.op == "topk/f32" && v.role == wb::Role::Reference;
  EXPECT_TRUE(topk_reference) << "chapter 7's library top-k, which the model's argmax/top-k uses, is not linked";
  EXPECT_NE(wb::find_op("linear_bias/bf16"), nullptr);
  EXPECT_NE(wb::find_op("residual_layernorm/bf16"), nullptr);
}

// The fused decode step's ops (chapters/ch09_gpt2/spec.cu) and the solution's kernels for them
// (solutions/ch09_gpt2/decode/v6_fused_decode.cu) are linked into the model, each op with its variant.
TEST(Registry, TheFusedDecodeStepsOpsAreLinked) {
  for (const char* op : {"ln_gemv/bf16", "ln_gemv/f32", "gemv_residual/bf16", "gemv_residual/f32", "gemv_argmax/bf16",
                         "gemv_argmax/f32", "ln_gemv_w8a16/bf16", "gemv_residual_w8a16/bf16"}) {
    EXPECT_NE(wb::find_op(op), nullptr) << op;
    bool found = false;
    for (const wb::Variant& v : wb::all_variants()) found |= v.op == op && v.name == "v6_fused_decode";
    EXPECT_TRUE(found) << op << " has no v6_fused_decode variant";
  }
}

// The INT4 ops (chapters/ch09_gpt2/spec_int4.cu) with the solution's kernels for them (v10, v11,
// and v14, which the model's fused step runs).
TEST(Registry, TheInt4OpsAreLinked) {
  for (auto [op, variant] : {std::pair{"gemv_w4a16/bf16", "v10_gemv_w4a16"},
                             {"gemv_w4a16_bias/bf16", "v10_gemv_w4a16"},
                             {"gemv_w4a16_bias_gelu/bf16", "v10_gemv_w4a16"},
                             {"ln_gemv_w4a16/bf16", "v11_fused_decode_w4a16"},
                             {"gemv_residual_w4a16/bf16", "v11_fused_decode_w4a16"},
                             {"gemv_w4a16/bf16", "v14_w4a16_loads_ahead"},
                             {"gemv_w4a16_bias/bf16", "v14_w4a16_loads_ahead"},
                             {"gemv_w4a16_bias_gelu/bf16", "v14_w4a16_loads_ahead"},
                             {"ln_gemv_w4a16/bf16", "v14_w4a16_loads_ahead"},
                             {"gemv_residual_w4a16/bf16", "v14_w4a16_loads_ahead"}}) {
    EXPECT_NE(wb::find_op(op), nullptr) << op;
    bool found = false;
    for (const wb::Variant& v : wb::all_variants()) found |= v.op == op && v.name == variant;
    EXPECT_TRUE(found) << op << " has no " << variant << " variant";
  }
}

// One layout, two spellings: the kernels' (ch09.cuh) and the quantizer's (quantize.h) agree on
// where every code of a row lives, and on the group and piece sizes.
TEST(Int4Layout, KernelsAndQuantizerAgree) {
  EXPECT_EQ(int64_t{ch09::kInt4Group}, kInt4Group);
  EXPECT_EQ(int64_t{ch09::kInt4Piece}, kInt4Piece);
  for (int K : {32, 160, 1600, 6400}) {
    for (int n : {0, 3}) {
      for (int k = 0; k < K; ++k) {
        const NibbleAt at = int4_nibble(n, k, K);
        ASSERT_EQ(at.byte, size_t(n) * (K / 2) + size_t(ch09::int4_byte_in_row(k))) << "K " << K << " k " << k;
        ASSERT_EQ(at.shift, ch09::int4_shift(k)) << "K " << K << " k " << k;
      }
    }
  }
}

TEST(ToolArgs, Tokens) {
  EXPECT_EQ(parse_tokens("1,2,50256"), (std::vector<int32_t>{1, 2, 50256}));
  EXPECT_THROW(parse_tokens("1,,2"), wb::UsageError);
  EXPECT_THROW(parse_tokens("1,x"), wb::UsageError);
  EXPECT_THROW(parse_tokens("-3"), wb::UsageError);
}

TEST(ToolArgs, SeededPromptIsInRangeAndRepeatable) {
  const auto a = seeded_prompt(500, 251, 4), b = seeded_prompt(500, 251, 4), c = seeded_prompt(500, 251, 5);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (int32_t t : a) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 251);
  }
}

ToolArgs parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gpt2");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  return parse_tool_args(static_cast<int>(argv.size()), argv.data());
}

std::string refusal(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const wb::UsageError& e) {
    return e.what();
  }
  return "accepted";
}

// Whether `message` holds every one of `phrases` (a refusal names the flags, and what to do
// instead); a failure prints the phrase missing and the whole message.
testing::AssertionResult says(const std::string& message, std::initializer_list<std::string_view> phrases) {
  for (std::string_view p : phrases) {
    if (message.find(p) == std::string::npos) return testing::AssertionFailure() << "no '" << p << "' in: " << message;
  }
  return testing::AssertionSuccess();
}

TEST(ToolArgs, GoodLine) {
  const ToolArgs a =
      parse({"--weights=m.safetensors", "--prompt-len=512", "--new=64", "--dtype=f32", "--kernels=library,solution",
             "--use=layernorm:student", "--no-graph", "--json=o.json", "--upload=plain"});
  EXPECT_EQ(a.prompt_len, 512);
  EXPECT_EQ(a.new_tokens, 64);
  EXPECT_EQ(a.dtype, wb::DType::F32);
  EXPECT_EQ(a.kernels, (std::vector<std::string>{"library", "solution"}));
  EXPECT_FALSE(a.graph);
  EXPECT_EQ(a.json, "o.json");
  EXPECT_EQ(a.upload, UploadMode::Plain);
  EXPECT_EQ(parse({"--weights=m", "--tokens=1"}).upload, UploadMode::Staged) << "staged is the default";
}

TEST(ToolArgs, Int8) {
  EXPECT_TRUE(parse({"--weights=m", "--tokens=1", "--int8"}).int8());
  EXPECT_EQ(parse({"--weights=m", "--tokens=1"}).weight_format, WeightFormat::Native) << "the model's own weights";
  EXPECT_EQ(Options{}.weight_format, WeightFormat::Native);
  EXPECT_TRUE(parse({"--weights=m", "--tokens=1", "--int8", "--kernels=library", "--use=gemv:solution"}).int8());
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--int8", "--dtype=f32"}),
                   {"--int8 with --dtype=f32", "--dtype=bf16"}))
      << "the message says what to do";
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--int8", "--kernels=solution,library"}),
                   {"--kernels=library", "--use=gemv:solution"}));
}

// --int4: parsed, and its impossible combinations refused before any GPU work, each message
// naming the flags and what to do instead.
TEST(ToolArgs, Int4) {
  EXPECT_TRUE(parse({"--weights=m", "--tokens=1", "--int4"}).int4());
  EXPECT_FALSE(parse({"--weights=m", "--tokens=1", "--int4"}).int8());
  const ToolArgs fused = parse({"--weights=m", "--tokens=1", "--int4", "--decode=fused"});
  EXPECT_TRUE(fused.int4() && fused.decode == DecodePath::Fused) << "the fused step's INT4 form";
  EXPECT_EQ(tool_options(fused, "solution").weight_format, WeightFormat::Int4);
  EXPECT_TRUE(parse({"--weights=m", "--tokens=1", "--int4", "--kernels=library", "--use=gemv:solution"}).int4());
  EXPECT_TRUE(
      says(refusal({"--weights=m", "--tokens=1", "--int4", "--int8"}), {"--int8 with --int4", "give one of the two"}))
      << "the message says what to do";
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--int4", "--dtype=f32"}),
                   {"--int4 with --dtype=f32", "--dtype=bf16"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--int4", "--kernels=library"}),
                   {"--int4 with --kernels=library", "v10_gemv_w4a16", "--use=gemv:solution"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--int4", "--decode=persistent"}),
                   {"--decode=persistent", "INT4 weights (--int4)", "--decode=fused"}))
      << "names what to run instead";
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--batch=4", "--int4"}), {"--batch with --int4"}));
}

TEST(ToolArgs, DecodeStep) {
  EXPECT_EQ(parse({"--weights=m", "--tokens=1"}).decode, DecodePath::Ops) << "the op-by-op step is the default";
  EXPECT_EQ(Options{}.decode, DecodePath::Ops) << "the op-by-op step is the default";
  EXPECT_EQ(parse({"--weights=m", "--tokens=1", "--decode=fused"}).decode, DecodePath::Fused);
  EXPECT_EQ(parse({"--weights=m", "--tokens=1", "--decode=ops"}).decode, DecodePath::Ops);
  EXPECT_EQ(parse({"--weights=m", "--tokens=1", "--decode=fused", "--dtype=f32", "--kernels=library"}).decode,
            DecodePath::Fused);
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--decode=fast"}), {"--decode=fast"}));
  const ToolArgs int8 = parse({"--weights=m", "--tokens=1", "--decode=fused", "--int8"});
  EXPECT_TRUE(int8.decode == DecodePath::Fused && int8.int8()) << "the fused step runs on INT8 weights too";
  EXPECT_EQ(parse({"--weights=m", "--tokens=1", "--decode=persistent"}).decode, DecodePath::Persistent);
  for (const char* other : {"--int8", "--dtype=f32"}) {
    EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--decode=persistent", other}),
                     {"--decode=persistent", "--decode=fused"}))
        << other << ": names what to run instead";
  }
  EXPECT_TRUE(says(refusal({"--weights=m", "--prompt-len=8", "--new=4", "--decode=persistent", "--overlap"}),
                   {"--overlap with --decode=persistent"}));
  // The model's rules, refused by the parser before any GPU work (the model would at load).
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--dtype=f32", "--kernels=student"}), {"--use=gemm:student"}));
  for (DecodePath p : {DecodePath::Ops, DecodePath::Fused, DecodePath::Persistent}) {
    const std::string flag = std::string("--decode=") + decode_path_name(p);
    EXPECT_EQ(parse({"--weights=m", "--tokens=1", flag}).decode, p) << flag << ": the name is the flag's spelling";
  }
}

// The tool's options are the ones the model gets: tool_options makes them from the parsed line.
TEST(ToolArgs, OptionsOfAComposition) {
  const ToolArgs a = parse({"--weights=m", "--prompt-len=8", "--int8", "--decode=fused", "--no-graph",
                            "--kernels=library,solution", "--use=gemv:solution", "--upload=plain"});
  const Options o = tool_options(a, "library");
  EXPECT_EQ(o.weight_format, WeightFormat::Int8);
  EXPECT_EQ(o.decode, DecodePath::Fused);
  EXPECT_FALSE(o.graph);
  EXPECT_EQ(o.upload, UploadMode::Plain);
  EXPECT_EQ(o.kernels.gemm, Who::Library);
  EXPECT_EQ(o.kernels.gemv, Who::Solution);
  EXPECT_EQ(tool_options(parse({"--weights=m", "--tokens=1", "--batch=4,16,2"}), "solution").batch, 16);
}

// The rules between Options' fields, checked without weights or a GPU (validate, options.cu):
// the model's constructor and the tool refuse the same combinations.
std::string validation(const Options& o) {
  try {
    validate(o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Options, ValidateRefusesImpossibleCombinations) {
  EXPECT_EQ(validation(Options{}), "accepted");
  Options o;
  o.decode = DecodePath::Persistent;
  EXPECT_EQ(validation(o), "accepted") << "the persistent step on BF16 weights";
  o.dtype = wb::DType::F32;
  EXPECT_TRUE(says(validation(o), {"--decode=persistent runs on BF16", "--decode=fused"}))
      << "names what to run instead";
  o.decode = DecodePath::Fused;
  EXPECT_EQ(validation(o), "accepted") << "the fused step runs in FP32 too";
  o.weight_format = WeightFormat::Int8;
  EXPECT_TRUE(says(validation(o), {"--int8 with --dtype=f32"})) << "INT8 weights need BF16";
  o.dtype = wb::DType::BF16;
  EXPECT_EQ(validation(o), "accepted") << "the fused step on INT8 weights";
  o.decode = DecodePath::Persistent;
  EXPECT_TRUE(says(validation(o), {"--int8"})) << "the persistent step has no INT8 form";
  o.decode = DecodePath::Ops;
  o.kernels = Kernels::all(Who::Library);
  EXPECT_TRUE(says(validation(o), {"gemv:library", "--use=gemv:solution"}));
  o.kernels = Kernels{};
  o.weight_format = WeightFormat::Int4;
  for (DecodePath p : {DecodePath::Ops, DecodePath::Fused}) {
    o.decode = p;
    EXPECT_EQ(validation(o), "accepted") << "INT4 weights, --decode=" << decode_path_name(p);
  }
  o.decode = DecodePath::Persistent;
  EXPECT_TRUE(says(validation(o), {"INT4 weights (--int4)"})) << "the persistent step has no INT4 form";
  o.decode = DecodePath::Fused;
  o.dtype = wb::DType::F32;
  EXPECT_TRUE(says(validation(o), {"--int4 with --dtype=f32"})) << "INT4 weights need BF16";
  o.dtype = wb::DType::BF16;
  o.kernels.gemv = Who::Student;
  EXPECT_TRUE(says(validation(o), {"--int4 with gemv:student"})) << "the solution's INT4 GEMV";
  EXPECT_STREQ(weight_format_flag(WeightFormat::Int4), "--int4");
  EXPECT_STREQ(weight_format_flag(WeightFormat::Int8), "--int8");
  Options student;
  student.dtype = wb::DType::F32;
  student.kernels = Kernels::parse("solution", "gemm:student");
  EXPECT_TRUE(says(validation(student), {"--use=gemm:student"})) << "the learner's matmuls are BF16";
  Options negative;
  negative.batch = -1;
  EXPECT_TRUE(says(validation(negative), {"Options::batch >= 1"}));
  Options f16;
  f16.dtype = wb::DType::F16;
  EXPECT_TRUE(says(validation(f16), {"f32 or bf16"}));
}

TEST(ToolArgs, Overlap) {
  EXPECT_FALSE(parse({"--weights=m", "--tokens=1"}).overlap) << "no second model unless asked";
  EXPECT_TRUE(parse({"--weights=m", "--prompt-len=512", "--new=128", "--overlap"}).overlap);
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--new=1", "--overlap"}),
                   {"--overlap with --new=1", "--new=2 or more"}))
      << "the message says what to do";
}

TEST(ToolArgs, Batch) {
  EXPECT_TRUE(parse({"--weights=m", "--tokens=1"}).batch.empty()) << "no batched run unless asked";
  EXPECT_EQ(Options{}.batch, 0) << "no batched caches unless asked";
  EXPECT_EQ(parse({"--weights=m", "--prompt-len=512", "--batch=1,4,16,64"}).batch, (std::vector<int>{1, 4, 16, 64}));
  EXPECT_EQ(parse({"--weights=m", "--tokens=1", "--batch=3", "--dtype=f32"}).batch, (std::vector<int>{3}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--batch=0,x"}), {"--batch", "from 1 to"}))
      << "the message says what to give";
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--batch=4,x"}), {"'x' is not a whole number"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--batch=4,,8"}), {"empty size"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--batch=5000"}), {"1 to 1024"}));
  EXPECT_TRUE(
      says(refusal({"--weights=m", "--tokens=1", "--batch=4", "--decode=fused"}), {"--batch with --decode=fused"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--batch=4", "--int8"}), {"--batch with --int8"}));
}

// The batched step's cost model on GPT-2 124M (L 12, C 768, V 50257) in BF16, 512 positions.
TEST(BatchCost, BytesFlopsAndBound) {
  Config c;
  c.n_layer = 12, c.n_head = 12, c.n_embd = 768, c.vocab = 50257, c.n_ctx = 1024;
  const double weights = 250e6;
  const BatchStepCost one = batch_step_cost(c, 2, weights, 1, 512);
  const BatchStepCost many = batch_step_cost(c, 2, weights, 64, 512);
  EXPECT_DOUBLE_EQ(one.kv_bytes, 2.0 * 12 * 512 * 768 * 2);
  EXPECT_DOUBLE_EQ(many.kv_bytes, 64 * one.kv_bytes) << "every sequence reads its own cache";
  EXPECT_DOUBLE_EQ(many.weight_bytes, weights) << "the weights are read once per step, whatever B";
  EXPECT_DOUBLE_EQ(one.flops, 2.0 * (12.0 * 12 * 768 * 768 + 50257.0 * 768) + 4.0 * 12 * 768 * 512);
  EXPECT_DOUBLE_EQ(many.flops, 64 * one.flops);
  EXPECT_LT(one.intensity(), 2.0) << "batch 1: about one multiply-add per weight (2 bytes)";
  EXPECT_NEAR(many.linear_intensity() / one.linear_intensity(), 64, 1e-9) << "each weight reused B times";
  EXPECT_LT(many.intensity(), 20.0) << "each sequence's cache is its own: the step's intensity levels off";
  // H100 SXM datasheet: 989 TFLOPS BF16 dense, 3350 GB/s: balance about 295 FLOP/byte.
  EXPECT_STREQ(batch_bound(one.intensity(), 989, 3350), "memory");
  EXPECT_STREQ(batch_bound(many.intensity(), 989, 3350), "memory");
  EXPECT_STREQ(batch_bound(batch_step_cost(c, 2, weights, 512, 1).linear_intensity(), 989, 3350), "compute");
  EXPECT_STREQ(batch_bound(one.intensity(), 0, 3350), "-") << "an unknown ceiling decides nothing";
}

TEST(BatchCost, MemoryRefusalSaysWhatToDo) {
  Config c;
  c.n_layer = 48, c.n_head = 25, c.n_embd = 1600, c.vocab = 50257, c.n_ctx = 1024;
  const double need = batch_memory_bytes(c, 2, 64, 641);
  EXPECT_GT(need, 64 * 2.0 * 48 * 641 * 1600 * 2) << "the caches, and some rows of activations";
  EXPECT_EQ(batch_memory_refusal(64, need, 80e9), "");
  EXPECT_TRUE(
      says(batch_memory_refusal(1024, batch_memory_bytes(c, 2, 1024, 641), 70e9), {"--batch=1024", "smaller --batch"}));
}

TEST(ToolArgs, BadLinesNameTheArgument) {
  EXPECT_TRUE(says(refusal({"--prompt-len=4"}), {"--weights"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--prompt-len=4"}), {"one way"}));
  EXPECT_TRUE(says(refusal({"--weights=m"}), {"one way"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--dtype=fp8"}), {"--dtype=fp8"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--kernels=mine"}), {"'mine'"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--new=0"}), {"--new"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--use=gemm"}), {"op:who"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--frobnicate"}), {"frobnicate"}));
  EXPECT_TRUE(says(refusal({"--weights=m", "--tokens=1", "--upload=fast"}), {"--upload=fast"}));
}

}  // namespace
}  // namespace gpt2
