// The GPU model end to end on small random GPT-2s, against the float64 CPU forward of
// models/gpt2 (cpu_forward.h): the library and solution compositions in FP32 and BF16, the
// KV-cache decode against full recompute, the graph replay against the eager step, and
// --check's per-op comparison. Each test skips, with the reason, without a GPU.
//
// Bounds on the relative L2 error of the last position's logits:
//   FP32  1e-5: FP32 sums of at most 4C terms and an FP32 softmax, against float64.
//   BF16  5e-2: the CPU reference runs on the same BF16-rounded weights, so the gap is the
//         activations: every op rounds its output to BF16 (relative 2^-9 = 2e-3 each), about
//         eight roundings per layer feed into the residual stream and the LayerNorms amplify
//         nothing systematic; a handful of layers land near 1e-2. 5e-2 leaves room for that
//         and still fails any wiring or layout mistake (those give errors of order 1).
// Student* tests run the learner's composition (label ch09-student): they fail with
// not-implemented until exercises 1-4 (and chapter 6's and 7's) are written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unistd.h>
#include <random>
#include <string>

#include "cpu_forward.h"
#include "cuda/device.cuh"
#include "cuda/launch.cuh"
#include "model.h"
#include "random_weights.h"
#include "weights.h"

namespace gpt2 {
namespace {

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    if (auto reason = wb::gpu_missing_reason()) GTEST_SKIP() << *reason;       \
  } while (0)

double rel_l2(const std::vector<float>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}
double rel_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  return rel_l2(got, std::vector<double>(ref.begin(), ref.end()));
}

double bound(wb::DType t) { return t == wb::DType::F32 ? 1e-5 : 5e-2; }

// A random GPT-2 file, written once per config into a temporary folder.
const std::string& model_file(const std::string& config) {
  static std::map<std::string, std::string> files;
  auto it = files.find(config);
  if (it != files.end()) return it->second;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ch09_model_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (std::to_string(files.size()) + ".safetensors")).string();
  RandomOptions o;
  o.seed = 7;
  write_random_weights(path, parse_config(config), o, true);
  return files.emplace(config, path).first->second;
}

std::vector<int32_t> prompt_of(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p(n);
  for (auto& t : p) t = static_cast<int32_t>(rng() % vocab);
  return p;
}

struct Case {
  std::string config;  // parse_config text
  wb::DType dtype;
  Who who;
  int prompt;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = std::string(who_name(info.param.who)) + (info.param.dtype == wb::DType::F32 ? "_f32" : "_bf16");
  n += info.param.config == "tiny" ? "_tiny" : "_C192";
  return n;
}

class Composition : public ::testing::TestWithParam<Case> {};

// forward() on a prompt vs the float64 CPU forward, on the same (rounded) weights.
TEST_P(Composition, ForwardMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  const Weights w = load_weights(model_file(c.config), {.dtype = c.dtype});
  Options o;
  o.dtype = c.dtype;
  o.kernels = Kernels::all(c.who);
  Model model = Model::from_weights(w, o);
  const auto prompt = prompt_of(c.prompt, w.config.vocab, 11);
  const auto ref = cpu::forward(w, prompt);
  const std::vector<double> last(ref.end() - w.config.vocab, ref.end());
  const double e = rel_l2(model.forward(prompt), last);
  RecordProperty("rel_l2", std::to_string(e));
  std::printf("relative L2 of the logits: %.3g (bound %.0e)\n", e, bound(c.dtype));
  EXPECT_LE(e, bound(c.dtype));
  EXPECT_GT(e, 0.0) << "bit-identical to float64: the comparison is not looking at the GPU's logits";
}

// prefill + 24 decode steps vs forward over the same tokens (full recompute), and vs the
// float64 CPU decoder.
TEST_P(Composition, DecodeMatchesRecompute) {
  SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  const Weights w = load_weights(model_file(c.config), {.dtype = c.dtype});
  Options o;
  o.dtype = c.dtype;
  o.kernels = Kernels::all(c.who);
  Model model = Model::from_weights(w, o);
  cpu::Model cm(w);
  cpu::Decoder dec(cm);
  std::vector<int32_t> seq = prompt_of(c.prompt, w.config.vocab, 5);
  int next = model.prefill(seq);
  dec.prefill(seq);
  const int steps = std::min(24, w.config.n_ctx - c.prompt - 1);
  for (int i = 0; i < steps; ++i) {
    // Feed a token of our own choosing too, not only the argmax: every id path gets used.
    const int32_t tok = i % 3 == 2 ? (next + 17) % w.config.vocab : next;
    seq.push_back(tok);
    next = model.decode(tok);
    const auto decoded = model.logits();
    const auto cpu_logits = dec.decode(tok);
    EXPECT_LE(rel_l2(decoded, cpu_logits), bound(c.dtype)) << "decode step " << i << " vs the float64 decoder";
    if (i % 8 == 7) {
      // Full recompute on the GPU (this resets the cache), then rebuild the cache to continue.
      const auto full = model.forward(seq);
      EXPECT_LE(rel_l2(decoded, full), bound(c.dtype)) << "decode step " << i << " vs forward of " << seq.size();
      std::vector<int32_t> prefix(seq.begin(), seq.end() - 1);
      model.prefill(prefix);
      next = model.decode(seq.back());
    }
  }
}

// --check's per-op comparison passes for this composition.
TEST_P(Composition, EveryOpWithinTolerance) {
  SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  const Weights w = load_weights(model_file(c.config), {.dtype = c.dtype});
  Options o;
  o.dtype = c.dtype;
  o.kernels = Kernels::all(c.who);
  Model model = Model::from_weights(w, o);
  const CheckReport r = model.check_ops(prompt_of(c.prompt, w.config.vocab, 3));
  for (const auto& l : r.lines) std::printf("  %s\n", l.c_str());
  EXPECT_TRUE(r.ok) << r.first_failure;
  EXPECT_EQ(r.ops_checked, 1 + 8 * w.config.n_layer + 3) << "embedding, 8 ops per block, ln_f, lm_head, argmax";
}

// The decode step replayed from its CUDA Graph equals the eager step, bit for bit, and the
// graph is then used by decode().
TEST_P(Composition, GraphReplayEqualsEager) {
  SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  const Weights w = load_weights(model_file(c.config), {.dtype = c.dtype});
  Options o;
  o.dtype = c.dtype;
  o.kernels = Kernels::all(c.who);
  Model model = Model::from_weights(w, o);
  const auto prompt = prompt_of(c.prompt, w.config.vocab, 9);
  model.prefill(prompt);
  const std::string diff = model.check_graph_replay(prompt.back());
  if (!model.graph_problem().empty()) std::printf("capture problem: %s\n", model.graph_problem().c_str());
  EXPECT_EQ(diff, "");
  // A few graph steps, then the same from scratch eagerly: same tokens.
  model.prefill(prompt);
  const auto with_graph = model.generate(6);
  EXPECT_TRUE(model.graph_active());
  Options eager = o;
  eager.graph = false;
  Model m2 = Model::from_weights(w, eager);
  m2.prefill(prompt);
  EXPECT_EQ(m2.generate(6), with_graph);
  EXPECT_GT(model.kernels_per_step(), 8 * w.config.n_layer) << "every op of every block is one kernel or more";
}

INSTANTIATE_TEST_SUITE_P(Gpt2, Composition,
                         ::testing::Values(Case{"tiny", wb::DType::F32, Who::Library, 13},
                                           Case{"tiny", wb::DType::F32, Who::Solution, 13},
                                           Case{"tiny", wb::DType::BF16, Who::Library, 13},
                                           Case{"tiny", wb::DType::BF16, Who::Solution, 13},
                                           Case{"L=3,C=192,H=3,V=517,P=96", wb::DType::F32, Who::Solution, 41},
                                           Case{"L=3,C=192,H=3,V=517,P=96", wb::DType::BF16, Who::Solution, 41},
                                           Case{"L=3,C=192,H=3,V=517,P=96", wb::DType::BF16, Who::Library, 41}),
                         case_name);

// The learner's composition (every op theirs, BF16): not-implemented until written, then
// held to the same bound as the solution.
TEST(StudentComposition, ForwardMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const Weights w = load_weights(model_file("tiny"), {.dtype = wb::DType::BF16});
  Options o;
  o.dtype = wb::DType::BF16;
  o.kernels = Kernels::all(Who::Student);
  Model model = Model::from_weights(w, o);
  const auto prompt = prompt_of(13, w.config.vocab, 11);
  std::vector<float> got;
  try {
    got = model.forward(prompt);
  } catch (const wb::NotImplemented& e) {
    FAIL() << e.what();
  }
  const auto ref = cpu::forward(w, prompt);
  EXPECT_LE(rel_l2(got, std::vector<double>(ref.end() - w.config.vocab, ref.end())), bound(wb::DType::BF16));
}

TEST(StudentComposition, DecodeGraphReplayEqualsEager) {
  SKIP_WITHOUT_GPU();
  const Weights w = load_weights(model_file("tiny"), {.dtype = wb::DType::BF16});
  Options o;
  o.dtype = wb::DType::BF16;
  o.kernels = Kernels::all(Who::Student);
  Model model = Model::from_weights(w, o);
  const auto prompt = prompt_of(13, w.config.vocab, 2);
  try {
    model.prefill(prompt);
    EXPECT_EQ(model.check_graph_replay(prompt.back()), "");
  } catch (const wb::NotImplemented& e) {
    FAIL() << e.what();
  }
}

}  // namespace
}  // namespace gpt2
