// Host tests of chapter 4's autotuning plumbing: which tile configurations are valid, and
// how the per-GPU config file is read, chosen from and merged. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "sgemm_config.h"

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
  EXPECT_EQ(problem({256, 128, 16, 64, 64, 8, 16, 256}), "") << "49.7 KB: above the 48 KB default, allowed by opting in";
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

TEST(SgemmConfigFile, JsonRoundTrip) {
  const SgemmConfig c{64, 128, 16, 32, 64, 8, 8, 128};
  EXPECT_EQ(config_from_json(Json::parse(config_to_json(c).dump())), c);
  const SgemmConfig p{128, 128, 8, 64, 32, 8, 8, 256, 1};
  EXPECT_EQ(p.name(), "128x128x8_w64x32_t8x8_n256_pf");
  EXPECT_EQ(config_from_json(Json::parse(config_to_json(p).dump())), p);
  // Files written before "pf" existed still read, as pf = 0.
  EXPECT_EQ(config_from_json(Json::parse(
                R"({"bm":64,"bn":128,"bk":16,"wm":32,"wn":64,"tm":8,"tn":8,"threads":128})")),
            c);
  EXPECT_THROW(config_from_json(Json::parse(R"({"bm": 128})")), std::runtime_error);
  EXPECT_THROW(config_from_json(Json::parse(
                   R"({"bm":128,"bn":128,"bk":8.5,"wm":64,"wn":32,"tm":8,"tn":8,"threads":256})")),
               std::runtime_error);
}

TEST(SgemmConfigFile, PathFromTheEnvironmentOrTheRepository) {
  EXPECT_EQ(sgemm_config_path(nullptr, "/repo/configs"), "/repo/configs/ch04_sgemm.json");
  EXPECT_EQ(sgemm_config_path("", "/repo/configs/"), "/repo/configs/ch04_sgemm.json");
  EXPECT_EQ(sgemm_config_path("/tmp/mine", "/repo/configs"), "/tmp/mine/ch04_sgemm.json");
}

std::string file_with(const std::string& key, const SgemmConfig& c) {
  const Json entry = {{"gpu", "test GPU"}, {"best", config_to_json(c)}};
  return merge_tune_entry(Json(), key, entry).dump();
}

TEST(SgemmConfigFile, PicksTheEntryOfThisGpu) {
  const auto available = valid_candidates();
  const SgemmConfig tuned{128, 128, 16, 32, 64, 8, 8, 256};
  const std::string key = gpu_key("NVIDIA H100 80GB HBM3", 9, 0);
  EXPECT_EQ(key, "NVIDIA H100 80GB HBM3 sm_90");
  const auto choice = choose_sgemm_config(file_with(key, tuned), "configs/ch04_sgemm.json", key, available);
  EXPECT_TRUE(choice.from_file);
  EXPECT_EQ(choice.config, tuned);
  EXPECT_NE(choice.source.find("configs/ch04_sgemm.json"), std::string::npos) << choice.source;
  EXPECT_NE(choice.source.find(key), std::string::npos) << choice.source;
}

TEST(SgemmConfigFile, FallsBackToTheDefaultAndSaysWhy) {
  const auto available = valid_candidates();
  const std::string key = gpu_key("NVIDIA H200", 9, 0);
  struct Case {
    std::optional<std::string> text;
    std::string expect;
  } cases[] = {
      {std::nullopt, "no config file"},
      {"{ not json", "could not be read"},
      {R"({"about": "x"})", "no \"gpus\""},
      {file_with(gpu_key("NVIDIA A100-SXM4-80GB", 8, 0), {128, 128, 16, 32, 64, 8, 8, 256}), "no entry for"},
      {file_with(key, {96, 96, 8, 48, 24, 8, 8, 256}), "does not compile"},
      {R"({"gpus": {"NVIDIA H200 sm_90": {"best": {"bm": 128}}}})", "could not be read"},
  };
  for (const auto& c : cases) {
    const auto choice = choose_sgemm_config(c.text, "f.json", key, available);
    EXPECT_FALSE(choice.from_file);
    EXPECT_EQ(choice.config, kSgemmDefault);
    EXPECT_NE(choice.source.find("built-in default"), std::string::npos) << choice.source;
    EXPECT_NE(choice.source.find(c.expect), std::string::npos) << choice.source;
  }
}

TEST(SgemmConfigFile, ReadsTheFileFromDisk) {
  const std::string path = ::testing::TempDir() + "ch04_sgemm_host_test.json";
  const std::string key = gpu_key("NVIDIA H100 PCIe", 9, 0);
  const SgemmConfig tuned{64, 128, 8, 32, 64, 8, 8, 128};
  {
    std::ofstream out(path);
    out << file_with(key, tuned);
  }
  const auto choice = choose_sgemm_config_file(path, key, valid_candidates());
  EXPECT_TRUE(choice.from_file) << choice.source;
  EXPECT_EQ(choice.config, tuned);
  std::remove(path.c_str());
  EXPECT_FALSE(choose_sgemm_config_file(path, key, valid_candidates()).from_file);
}

TEST(SgemmConfigFile, MergingKeepsTheOtherGpus) {
  const std::string h100 = gpu_key("NVIDIA H100 80GB HBM3", 9, 0), a100 = gpu_key("NVIDIA A100-SXM4-80GB", 8, 0);
  const Json one = {{"best", config_to_json(kSgemmDefault)}};
  const Json two = {{"best", config_to_json({128, 64, 8, 64, 32, 8, 8, 128})}};
  Json doc = merge_tune_entry(Json(), h100, one);
  doc = merge_tune_entry(Json::parse(doc.dump()), a100, two);
  ASSERT_TRUE(doc.contains("gpus"));
  EXPECT_TRUE(doc["gpus"].contains(h100));
  EXPECT_TRUE(doc["gpus"].contains(a100));
  // Tuning the same GPU again replaces its entry only.
  doc = merge_tune_entry(doc, h100, two);
  EXPECT_EQ(config_from_json(doc["gpus"][h100]["best"]), (SgemmConfig{128, 64, 8, 64, 32, 8, 8, 128}));
  EXPECT_EQ(doc["gpus"].size(), 2u);
  EXPECT_THROW(merge_tune_entry(Json::parse("[1, 2]"), h100, one), std::runtime_error);
}

TEST(SgemmConfigFile, PerShapeWinnersAreUsedForNearbyShapes) {
  const SgemmConfig best = {128, 128, 8, 32, 64, 8, 8, 256};
  const SgemmConfig small = {64, 128, 16, 32, 64, 8, 8, 128};
  const SgemmConfig large = {128, 128, 16, 64, 64, 16, 8, 128};
  const std::string text = R"({"gpus": {"G sm_90": {"best": )" + config_to_json(best).dump() +
                           R"(, "shapes": [{"shape": "M1024_N1024_K1024", "best": ")" + small.name() +
                           R"("}, {"shape": "M4096_N4096_K4096", "best": ")" + large.name() +
                           R"("}, {"shape": "M2048_N2048_K2048", "best": "not_compiled_in"}, {"shape": "junk", "best": ")" +
                           small.name() + R"("}]}}})";
  const auto choice = choose_sgemm_config(text, "f.json", "G sm_90", {best, small, large});
  ASSERT_TRUE(choice.from_file) << choice.source;
  ASSERT_EQ(choice.by_shape.size(), 2u) << "the unknown config and the malformed shape are left out";
  EXPECT_EQ(config_for_shape(choice, 1024, 1024, 1024), small);
  EXPECT_EQ(config_for_shape(choice, 1000, 1100, 900), small);
  EXPECT_EQ(config_for_shape(choice, 4096, 4096, 4096), large);
  EXPECT_EQ(config_for_shape(choice, 4096, 2048, 8192), large);
  EXPECT_EQ(config_for_shape(choice, 7, 5, 3), best) << "far from every swept shape: the overall winner";
  EXPECT_EQ(config_for_shape(ConfigChoice{best, false, "default", {}}, 1024, 1024, 1024), best);
  EXPECT_FALSE(parse_shape_key("M1_N2").has_value());
  EXPECT_FALSE(parse_shape_key("M1_N2_K3x").has_value());
  EXPECT_EQ(parse_shape_key("M4096_N1024_K8192")->n, 1024);
}

}  // namespace
}  // namespace ch04
