// The one results schema's writer (report/results.h): what every results file starts with,
// the device and ceilings blocks, and writing a file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "measure/ceilings_cache.h"
#include "report/results.h"

namespace wb::results {
namespace {

TEST(Results, EveryFileStartsWithVersionProgramKindDateCommit) {
  const Json h = header("ch07_tune", kTuning);
  ASSERT_EQ(h.size(), 5u);
  auto it = h.begin();
  for (const char* key : {"schema_version", "program", "kind", "date", "commit"}) EXPECT_EQ((it++).key(), key);
  EXPECT_EQ(h["schema_version"], 3);
  EXPECT_EQ(h["program"], "ch07_tune");
  EXPECT_EQ(h["kind"], "tuning");
  EXPECT_EQ(h["date"].get<std::string>().size(), 19u);  // 2026-11-28T10:00:00
}

TEST(Results, DeviceAndCeilings) {
  DeviceInfo d;
  d.name = "Test GPU";
  d.major = 8;
  d.minor = 6;
  d.sms = 84;
  d.sm_clock_khz = 1.8e6;
  d.driver_version = 12040;
  const Json j = device(d);
  EXPECT_EQ(j["compute_capability"], "8.6");
  EXPECT_EQ(j["sm_clock_mhz"], 1800.0);
  EXPECT_EQ(j["driver"], "12.4");
  Ceilings c;
  c.dram_gbps = 900;
  c.bf16_tflops = 150;
  EXPECT_EQ(spec_ceilings(c)["bf16_tflops"], 150.0);
  MeasuredCeilings m;
  m.values.dram_gbps = 800;
  m.from_cache = true;
  EXPECT_EQ(measured_ceilings(m)["copy_gbps"], 800.0);
  EXPECT_EQ(measured_ceilings(m)["from_cache"], true);
}

TEST(Results, WriteMakesTheFolderAndSaysWhenItCannot) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "wb-results-test" / "sub";
  std::filesystem::remove_all(dir.parent_path());
  const std::string path = (dir / "r.json").string();
  const Json doc = {{"schema_version", 3}, {"bad", "\xff"}, {"nan", std::nan("")}};
  ASSERT_EQ(write(path, doc), "");
  std::ifstream in(path);
  const Json back = Json::parse(in);
  EXPECT_EQ(back["schema_version"], 3);
  EXPECT_TRUE(back["nan"].is_null()) << "JSON has no NaN";
  EXPECT_NE(write("/proc/no-such-folder/r.json", doc), "");
  EXPECT_EQ(default_path("ch03").rfind("results/ch03-", 0), 0u);
  std::filesystem::remove_all(dir.parent_path());
}

// The other kinds, as the gpt2 tool and the tuners write them; with WB_RESULTS_SAMPLE_DIR set
// (ctest's results.sample_documents) they are written there for the Python reader's test.
TEST(ResultsSample, ModelAndTuning) {
  DeviceInfo d;
  d.name = "Test GPU";
  d.major = 9;
  d.sms = 132;
  d.spec.dram_gbps = 3352;
  Json model = model_document("gpt2", d);
  model["runs"] = Json::array({{{"kernels", "library"}, {"ttft_ms", 4.0}, {"decode_tok_s", 1000.0}}});
  EXPECT_EQ(model["kind"], "model");
  EXPECT_EQ(model["tool"], "gpt2");
  Json tuning = tuning_document("ch07_tune", "ch07", d);
  tuning["results"].push_back(tuning_row("softmax_topk/f32", "B=64,V=128256,k=50", "v5_radix_select", "solution",
                                         Json{{"threads", 256}}, "pass", "", 20.0, 60, 32e6, 0));
  tuning["results"].push_back(tuning_row("softmax_topk/f32", "B=64,V=128256,k=50", "v5_radix_select", "solution",
                                         Json{{"threads", 2048}}, "skipped", "too many threads", 0, 0, 32e6, 0));
  EXPECT_EQ(tuning["results"][0]["gbps"], 1600.0);
  EXPECT_FALSE(tuning["results"][1].contains("median_us"));
  if (const char* dir = std::getenv("WB_RESULTS_SAMPLE_DIR")) {
    EXPECT_EQ(write(std::string(dir) + "/model.json", model), "");
    EXPECT_EQ(write(std::string(dir) + "/tuning.json", tuning), "");
  }
}

TEST(CeilingsCache, RoundTripAndUnreadableFiles) {
  const std::string path = ::testing::TempDir() + "wb-ceilings-test/ceilings-x.json";
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  EXPECT_FALSE(read_ceilings_cache(path).has_value());
  Ceilings c;
  c.dram_gbps = 3000;
  c.i8_tops = 1400;
  ASSERT_TRUE(write_ceilings_cache(path, "GPU", "uuid", "13.0", c));
  const auto back = read_ceilings_cache(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->dram_gbps, 3000);
  EXPECT_EQ(back->i8_tops, 1400);
  std::ofstream(path) << "{ not json";
  EXPECT_FALSE(read_ceilings_cache(path).has_value());
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
}  // namespace wb::results
