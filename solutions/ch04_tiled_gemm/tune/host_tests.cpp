// Host tests of chapter 4's autotuning: which tile configurations are valid, v8's tunable
// space, and its config file in the book's one format (harness/tune/tune.h), the
// repository's own configs/ch04_sgemm.json included. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sgemm_config.h"

#ifndef WB_CH04_CONFIG_DIR
#error "WB_CH04_CONFIG_DIR must name the repository's configs folder (set by the build)"
#endif

namespace ch04 {
namespace {

std::vector<SgemmConfig> valid_candidates() {
  std::vector<SgemmConfig> out;
  for (const auto& c : kSgemmCandidates) {
    if (sgemm_config_problem(c) == nullptr) out.push_back(c);
  }
  return out;
}

TEST(SgemmConfig, NamesAreReadableAndUnique) {
  EXPECT_EQ(kSgemmDefault.name(), "128x128x8_w64x32_t8x8_n256");
  std::vector<std::string> names;
  for (const auto& c : kSgemmCandidates) names.push_back(c.name());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "a candidate is listed twice";
}

TEST(SgemmConfig, DefaultIsValidAndASweepCandidate) {
  static_assert(sgemm_config_problem(kSgemmDefault) == nullptr, "the default must build");
  const auto valid = valid_candidates();
  EXPECT_NE(std::find(valid.begin(), valid.end(), kSgemmDefault), valid.end());
  EXPECT_GE(valid.size(), 12u) << "the sweep should have a dozen configurations to choose from";
  EXPECT_LE(valid.size(), 24u) << "each one is compiled: keep the build time modest";
}

TEST(SgemmConfig, InvalidCandidatesSayWhy) {
  auto problem = [](SgemmConfig c) { return std::string(sgemm_config_problem(c) ? sgemm_config_problem(c) : ""); };
  EXPECT_NE(problem({128, 128, 32, 64, 32, 8, 8, 256}).find("64 KB"), std::string::npos);
  EXPECT_EQ(problem({256, 128, 16, 64, 64, 8, 16, 256}), "")
      << "49.7 KB: above the 48 KB default, allowed by opting in";
  EXPECT_NE(problem({128, 128, 8, 64, 32, 8, 8, 256, 2}).find("pf"), std::string::npos);
  EXPECT_NE(problem({128, 128, 8, 32, 32, 4, 8, 512}).find("A's tile"), std::string::npos);
  EXPECT_NE(problem({128, 128, 8, 64, 32, 8, 8, 512}).find("warp tiles"), std::string::npos);
  EXPECT_NE(problem({128, 128, 8, 32, 32, 4, 4, 512}).find("32 lanes"), std::string::npos);
  EXPECT_NE(problem({256, 256, 8, 128, 64, 16, 16, 256}).find("accumulators"), std::string::npos);
  EXPECT_NE(problem({128, 128, 8, 64, 32, 6, 8, 256}).find("multiples of 4"), std::string::npos);
  EXPECT_NE(problem({128, 128, 8, 0, 32, 8, 8, 256}).find("positive"), std::string::npos);
  int invalid = 0;
  for (const auto& c : kSgemmCandidates) invalid += sgemm_config_problem(c) != nullptr;
  EXPECT_GE(invalid, 3) << "the sweep should show a few configurations being skipped";
}

TEST(SgemmConfig, SharedMemoryOfTheDefault) {
  // Two buffers of (8 x (128 + 4)) + (8 x 128) floats.
  EXPECT_EQ(sgemm_smem_bytes(kSgemmDefault), 2 * (8 * 132 + 8 * 128) * 4);
}

TEST(SgemmSpace, ThePointsAreTheCompiledConfigurations) {
  const auto valid = valid_candidates();
  const wb::tune::Space s = sgemm_space(valid);
  EXPECT_EQ(s.name, "ch04_sgemm") << "the config file is configs/ch04_sgemm.json";
  ASSERT_EQ(s.all().size(), valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    EXPECT_EQ(from_tune(s.all()[i]), valid[i]);
    EXPECT_EQ(s.name_of(s.all()[i]), valid[i].name()) << "points keep their readable names";
  }
  EXPECT_EQ(s.dims, (std::vector<std::string>{"M", "N", "K"}));
  EXPECT_EQ(from_tune(s.heuristic(wb::Shape{{"M", 5}, {"N", 5}, {"K", 5}}, {132, 90})), kSgemmDefault);
  EXPECT_TRUE(s.prefer_overall) << "far from every tuned shape: the overall winner, not the default";
  ASSERT_EQ(s.shapes.size(), 4u) << "the sweep's shapes: 1024^3, 2048^3, 4096^3, 4096x1024x8192";
  EXPECT_EQ(s.shapes[3].label(), "M4096_N1024_K8192_pad0_alpha1_beta0.5");
  ASSERT_EQ(s.check_shapes.size(), 2u);
  EXPECT_EQ(s.check_shapes[0]["pad"], 3) << "misaligned rows";
}

TEST(SgemmSpace, ConfigsRoundTripThroughTheConfigFormat) {
  const wb::tune::Space s = sgemm_space(valid_candidates());
  const SgemmConfig p{128, 128, 8, 64, 32, 8, 8, 256, 1};
  EXPECT_EQ(p.name(), "128x128x8_w64x32_t8x8_n256_pf");
  EXPECT_EQ(from_tune(s.from_json(wb::tune::Json::parse(to_tune(p).to_json().dump()))), p);
  const SgemmConfig c{64, 128, 16, 32, 64, 8, 8, 128};
  EXPECT_EQ(from_tune(s.from_json(to_tune(c).to_json())), c);
  EXPECT_THROW(s.from_json(wb::tune::Json::parse(R"({"bm": 128})")), std::runtime_error);
  // Valid values one by one, but not a configuration this build compiles.
  EXPECT_THROW(s.from_json(to_tune({64, 64, 8, 32, 64, 8, 8, 128}).to_json()), std::runtime_error);
  EXPECT_THROW(s.from_json(to_tune({96, 96, 8, 48, 24, 8, 8, 256}).to_json()), std::runtime_error);
}

// A config document as ch04_tune writes it: per-shape winners and the overall one.
std::string file_with(const std::string& key, const std::vector<std::pair<wb::Shape, SgemmConfig>>& winners,
                      const SgemmConfig* overall) {
  using Json = wb::tune::Json;
  Json entry = {{"gpu", "test GPU"}, {"space", "ch04_sgemm"}, {"winners", Json::array()}};
  for (const auto& [shape, c] : winners) {
    const Json sj = {{"M", shape["M"]}, {"N", shape["N"]}, {"K", shape["K"]}};
    entry["winners"].push_back({{"shape", sj}, {"config", to_tune(c).to_json()}, {"name", c.name()}, {"us", 100.0}});
  }
  if (overall) entry["overall"] = {{"config", to_tune(*overall).to_json()}, {"name", overall->name()}};
  return wb::tune::merge_entry(nullptr, "about", key, entry).dump(2);
}

TEST(SgemmSpace, PerShapeWinnersForNearbyShapesTheOverallOneElsewhere) {
  const wb::tune::Space s = sgemm_space(valid_candidates());
  const SgemmConfig best = {128, 128, 8, 32, 64, 8, 8, 256};
  const SgemmConfig small = {64, 128, 16, 32, 64, 8, 8, 128};
  const SgemmConfig large = {128, 128, 16, 64, 64, 16, 8, 128};
  const std::string key = wb::tune::gpu_key("NVIDIA H100 80GB HBM3", 9, 0);
  const std::string text = file_with(key,
                                     {{wb::Shape{{"M", 1024}, {"N", 1024}, {"K", 1024}}, small},
                                      {wb::Shape{{"M", 4096}, {"N", 4096}, {"K", 4096}}, large}},
                                     &best);
  const wb::tune::Tuned t = wb::tune::read_tuned(text, "f.json", key, s);
  ASSERT_TRUE(t.has_entry);
  ASSERT_EQ(t.winners.size(), 2u);
  auto near = [&](int64_t m, int64_t n, int64_t k) {
    return wb::tune::nearest(s, t.winners, wb::Shape{{"M", m}, {"N", n}, {"K", k}});
  };
  EXPECT_EQ(from_tune(*near(1024, 1024, 1024)), small);
  EXPECT_EQ(from_tune(*near(1000, 1100, 900)), small);
  EXPECT_EQ(from_tune(*near(4096, 2048, 8192)), large);
  EXPECT_FALSE(near(7, 5, 3).has_value()) << "far from every swept shape";
  ASSERT_TRUE(t.overall.has_value());
  EXPECT_EQ(from_tune(*t.overall), best) << "what a far shape runs";
  EXPECT_FALSE(wb::tune::read_tuned(text, "f.json", wb::tune::gpu_key("NVIDIA A100-SXM4-80GB", 8, 0), s).has_entry);
  // A winner this build does not compile makes the file unusable, named in the message.
  const std::string bad =
      file_with(key, {{wb::Shape{{"M", 64}, {"N", 64}, {"K", 64}}, {96, 96, 8, 48, 24, 8, 8, 256}}}, nullptr);
  try {
    wb::tune::read_tuned(bad, "configs/ch04_sgemm.json", key, s);
    ADD_FAILURE() << "accepted a configuration that is not compiled";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("configs/ch04_sgemm.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bm = 96"), std::string::npos) << e.what();
  }
}

TEST(SgemmSpace, TheRepositorysConfigFileIsInTheSharedFormat) {
  const std::string path = std::string(WB_CH04_CONFIG_DIR) + "/ch04_sgemm.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const wb::tune::Space s = sgemm_space(valid_candidates());
  const std::string h100 = wb::tune::gpu_key("NVIDIA H100 80GB HBM3", 9, 0);
  const wb::tune::Tuned t = wb::tune::read_tuned(text.str(), path, h100, s);
  ASSERT_TRUE(t.has_entry) << path << " has no entry for " << h100;
  EXPECT_EQ(t.winners.size(), 4u) << "one winner per swept shape";
  ASSERT_TRUE(t.overall.has_value());
  EXPECT_EQ(s.name_of(*t.overall), "128x128x8_w32x64_t8x8_n256");
  const auto small = wb::tune::nearest(s, t.winners, wb::Shape{{"M", 1024}, {"N", 1024}, {"K", 1024}});
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(s.name_of(*small), "64x128x16_w32x64_t8x8_n128");
  const wb::tune::Json doc = wb::tune::Json::parse(text.str());
  EXPECT_EQ(doc["gpus"][h100]["space"].get<std::string>(), "ch04_sgemm");
}

}  // namespace
}  // namespace ch04
