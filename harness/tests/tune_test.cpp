// The autotuner's host side: the points of a space, the config file, nearest winners.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tune/tune.h"

namespace wb::tune {
namespace {

Space two_knobs() {
  Space s;
  s.name = "test_space";
  s.params = {{"threads", {128, 256}, "threads per CTA"}, {"splits", {1, 4, 16}, "CTAs per row"}};
  s.dims = {"B", "V"};
  s.heuristic = [](const Shape&, const Facts&) { return Config({{"threads", 256}, {"splits", 4}}); };
  return s;
}

TEST(TuneSpace, EveryPointOnceFirstParameterSlowest) {
  const auto all = two_knobs().all();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all.front().name(), "threads128_splits1");
  EXPECT_EQ(all[1].name(), "threads128_splits4");
  EXPECT_EQ(all.back().name(), "threads256_splits16");
}

TEST(TuneSpace, ConfigFromJsonRefusesUnknownAndUnbuiltValues) {
  const Space s = two_knobs();
  EXPECT_EQ(s.from_json(Json::parse(R"({"threads": 128, "splits": 16})"))["splits"], 16);
  EXPECT_THROW(s.from_json(Json::parse(R"({"threads": 64, "splits": 16})")), std::runtime_error);
  EXPECT_THROW(s.from_json(Json::parse(R"({"threads": 128})")), std::runtime_error);
  EXPECT_THROW(s.from_json(Json::parse(R"({"threads": 128, "splits": 1, "warps": 2})")), std::runtime_error);
}

TEST(TuneFile, WinnersOfOneGpuNearestShapeWithinAFactor) {
  const Space s = two_knobs();
  const char* text = R"({"about": "x", "gpus": {
      "GPU A sm_90": {"winners": [
          {"shape": {"B": 1, "V": 128000}, "config": {"threads": 128, "splits": 16}, "us": 7},
          {"shape": {"B": 256, "V": 128000}, "config": {"threads": 256, "splits": 1}, "us": 40}]},
      "GPU B sm_80": {"winners": []}}})";
  const auto a = read_winners(text, "f.json", "GPU A sm_90", s);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(nearest(s, a, Shape{{"B", 2}, {"V", 100000}})->name(), "threads128_splits16");
  EXPECT_EQ(nearest(s, a, Shape{{"B", 200}, {"V", 150000}})->name(), "threads256_splits1");
  EXPECT_FALSE(nearest(s, a, Shape{{"B", 16}, {"V", 128000}}).has_value());  // 16x from both
  EXPECT_TRUE(read_winners(text, "f.json", "GPU B sm_80", s).empty());
  EXPECT_TRUE(read_winners(text, "f.json", "GPU C sm_75", s).empty());
}

TEST(TuneFile, MalformedFileNamesTheFileAndTheProblem) {
  const Space s = two_knobs();
  for (const char* bad : {"{", R"({"gpus": 3})", R"({"gpus": {"G": {}}})",
                          R"({"gpus": {"G": {"winners": [{"shape": {"B": 1}, "config": {"threads": 128, "splits": 1}}]}}})",
                          R"({"gpus": {"G": {"winners": [{"shape": {"B": 1, "V": 2}, "config": {"threads": 99, "splits": 1}}]}}})"}) {
    try {
      read_winners(bad, "configs/test_space.json", "G", s);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("configs/test_space.json"), std::string::npos) << e.what();
    }
  }
}

TEST(TuneFile, MergeKeepsOtherGpusAndRefusesANonConfigDocument) {
  const Json old = Json::parse(R"({"about": "x", "gpus": {"A": {"winners": []}, "B": {"winners": []}}})");
  const Json merged = merge_entry(&old, "about", "B", Json::parse(R"({"winners": [1]})"));
  EXPECT_TRUE(merged["gpus"].contains("A"));
  EXPECT_EQ(merged["gpus"]["B"]["winners"].size(), 1u);
  const Json not_config = Json::parse(R"({"something": "else"})");
  EXPECT_THROW(merge_entry(&not_config, "about", "B", Json::object()), std::runtime_error);
  EXPECT_EQ(config_path("", "configs", "s"), "configs/s.json");
  EXPECT_EQ(config_path("/tmp/c/", "configs", "s"), "/tmp/c/s.json");
}

}  // namespace
}  // namespace wb::tune
