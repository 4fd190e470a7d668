// The autotuner's host side: the points of a space, the config file, nearest winners.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/cli.h"
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
  for (const char* bad :
       {"{", R"({"gpus": 3})", R"({"gpus": {"G": {}}})",
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

// A space whose points are listed (compiled one by one) rather than every combination.
Space listed() {
  Space s = two_knobs();
  s.points = {Config({{"threads", 128}, {"splits", 16}}), Config({{"threads", 256}, {"splits", 4}})};
  s.label = [](const Config& c) { return std::to_string(c["threads"]) + "x" + std::to_string(c["splits"]); };
  return s;
}

TEST(TuneSpace, ListedPointsAndTheirNames) {
  const Space s = listed();
  ASSERT_EQ(s.all().size(), 2u);
  EXPECT_EQ(s.name_of(s.all()[0]), "128x16");
  EXPECT_EQ(two_knobs().name_of(s.all()[0]), "threads128_splits16") << "without a label, Config::name()";
  EXPECT_EQ(s.from_json(Json::parse(R"({"threads": 256, "splits": 4})"))["splits"], 4);
  try {
    s.from_json(Json::parse(R"({"threads": 128, "splits": 4})"));
    ADD_FAILURE() << "accepted a point that is not listed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("128x4 is not one of the points"), std::string::npos) << e.what();
  }
}

TEST(TuneFile, TheOverallWinnerIsReadWithTheEntry) {
  const Space s = listed();
  const char* text = R"({"gpus": {"G sm_90": {"winners": [
      {"shape": {"B": 1, "V": 1000}, "config": {"threads": 128, "splits": 16}}],
      "overall": {"config": {"threads": 256, "splits": 4}, "name": "256x4", "geomean_us": 3.5}}}})";
  const Tuned t = read_tuned(text, "f.json", "G sm_90", s);
  EXPECT_TRUE(t.has_entry);
  ASSERT_TRUE(t.overall.has_value());
  EXPECT_EQ(s.name_of(*t.overall), "256x4");
  EXPECT_FALSE(read_tuned(R"({"gpus": {"G sm_90": {"winners": []}}})", "f.json", "G sm_90", s).overall.has_value());
  EXPECT_THROW(read_tuned(R"({"gpus": {"G": {"winners": [], "overall": {"name": "x"}}}})", "f.json", "G", s),
               std::runtime_error);
}

TEST(TuneFile, OverallIsTheBestGeometricMeanAmongPointsTimedEverywhere) {
  // us[point][shape]; 0: not timed (wrong, skipped).
  EXPECT_EQ(overall_index({{10, 100}, {20, 40}, {1, 0}}), 1u) << "sqrt(800) < sqrt(1000); point 2 missed a shape";
  EXPECT_EQ(overall_index({{5}, {4}}), 1u);
  EXPECT_FALSE(overall_index({{0, 3}, {3, 0}}).has_value());
  EXPECT_FALSE(overall_index({}).has_value());
}

TEST(TuneShapes, DimsInOrderOrOneSizeForAll) {
  Space s;
  s.name = "gemm";
  s.dims = {"M", "N", "K"};
  Shape like{{"M", 1}, {"N", 1}, {"K", 1}, {"pad", 0}};
  like.set_param("beta", 0.5);
  const auto shapes = parse_shapes("1024,4096x1024x8192", s, like);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].label(), "M1024_N1024_K1024_pad0_beta0.5") << "other dims and params from `like`";
  EXPECT_EQ(shapes[1]["N"], 1024);
  EXPECT_EQ(shapes[1]["K"], 8192);
  auto refusal = [&](const std::string& text) {
    try {
      parse_shapes(text, s, like);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("1024x1024").find("is neither one size (all of MxNxK) nor MxNxK"), std::string::npos)
      << refusal("1024x1024");
  EXPECT_NE(refusal("1024,,2048").find("an empty shape"), std::string::npos);
  EXPECT_NE(refusal("1024xabcx4").find("'abc' is not a whole number"), std::string::npos) << refusal("1024xabcx4");
  EXPECT_NE(refusal("0").find("out of range"), std::string::npos);
  EXPECT_NE(refusal("").find("no shape given"), std::string::npos);
}

}  // namespace
}  // namespace wb::tune
