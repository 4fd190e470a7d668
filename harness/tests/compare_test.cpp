// Host tests of the comparison and its failure report.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "check/compare.h"

namespace wb {
namespace {

Tolerance tight() { return tolerance_for(DType::F32, 1); }

TEST(Compare, ExactMatchPasses) {
  std::vector<float> got = {1.0f, -2.5f, 3.25f};
  auto r = check_output(
      got, Layout::vector(3), [&](int64_t i) { return double(got[i]); }, tight());
  EXPECT_TRUE(r.ok) << r.report();
  EXPECT_EQ(r.checked, 3);
}

TEST(Compare, WrongValueIsReportedWithCoordinates) {
  std::vector<float> got(6, 1.0f);
  got[4] = 2.0f;  // (row 1, col 1) of a 2 x 3 matrix
  auto r = check_output(
      got, Layout::matrix(2, 3), [](int64_t) { return 1.0; }, tight());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.wrong, 1);
  const std::string rep = r.report();
  EXPECT_NE(rep.find("(row 1, col 1): expected 1, got 2"), std::string::npos) << rep;
  EXPECT_NE(rep.find("tile map"), std::string::npos) << rep;
}

TEST(Compare, PoisonIsReportedAsUnwritten) {
  std::vector<float> got(4, 0.5f);
  std::memcpy(&got[3], &Poison<float>::bits, sizeof(float));
  auto r = check_output(
      got, Layout::vector(4), [](int64_t) { return 0.5; }, tight());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.unwritten, 1);
  EXPECT_EQ(r.wrong, 0);
  EXPECT_NE(r.report().find("never written"), std::string::npos) << r.report();
}

TEST(Compare, NanAndInfNeverPass) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> got = {1.0f, bad};
    auto r = check_output(
        got, Layout::vector(2), [](int64_t) { return 1.0; }, tolerance_for(DType::BF16, 1 << 20));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.nonfinite, 1);
  }
  EXPECT_FALSE(Tolerance({1e9, 1e9}).allows(0.0, std::nan("")));
}

TEST(Compare, TileMapMarksOnlyTheBadRegion) {
  // 16 x 64 output, the last column wrong: only the right-most cells are marked.
  const int64_t rows = 16, cols = 64;
  std::vector<float> got(rows * cols, 1.0f);
  for (int64_t r = 0; r < rows; ++r) got[r * cols + cols - 1] = 7.0f;
  auto res = check_output(
      got, Layout::matrix(rows, cols), [](int64_t) { return 1.0; }, tight());
  ASSERT_FALSE(res.ok);
  EXPECT_NE(res.tile_map.find("|...............................x|"), std::string::npos) << res.tile_map;
}

TEST(Compare, LargeOutputsAreSampledButStillScannedForPoison) {
  const int64_t n = (int64_t{1} << 22) + 7;
  std::vector<float> got(n, 2.0f);
  std::memcpy(&got[n / 2], &Poison<float>::bits, sizeof(float));
  CheckOptions opt;
  opt.samples = 1000;
  auto r = check_output(
      got, Layout::vector(n), [](int64_t) { return 2.0; }, tight(), opt);
  EXPECT_TRUE(r.sampled);
  EXPECT_EQ(r.unwritten, 1);  // found by the full scan, whatever the sample
  EXPECT_LT(r.checked, n);
}

TEST(Compare, SamplingAlwaysCoversTheLastRow) {
  const int64_t rows = 4096, cols = 2048;
  std::vector<float> got(rows * cols, 1.0f);
  got[rows * cols - 1] = 5.0f;  // the very last element, where tail bugs live
  CheckOptions opt;
  opt.full_check_limit = 1000;
  opt.samples = 1000;
  auto r = check_output(
      got, Layout::matrix(rows, cols), [](int64_t) { return 1.0; }, tight(), opt);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.wrong, 1);
}

TEST(Layout, CoordinatesAreRowMajor) {
  Layout l{{"batch", "row", "col"}, {2, 3, 5}};
  EXPECT_EQ(l.coords(0), "(batch 0, row 0, col 0)");
  EXPECT_EQ(l.coords(2 * 3 * 5 - 1), "(batch 1, row 2, col 4)");
  EXPECT_EQ(l.coords(5 * 3 + 5 + 2), "(batch 1, row 1, col 2)");
  EXPECT_EQ(l.text(), "batch=2 row=3 col=5");
  EXPECT_EQ(l.rows(), 6);
}

}  // namespace
}  // namespace wb
