// The rule that turns the waits after the timed stream into "work left running"
// (measure/left_work.h): one long wait is measured again; only a repeated one disqualifies.
#include "measure/left_work.h"

#include <gtest/gtest.h>

using wb::bench::describe_left_work;
using wb::bench::judge_left_work;
using wb::bench::left_work_threshold_ms;
using wb::bench::LeftOver;
using wb::bench::LeftWork;

TEST(LeftWork, ThresholdIsTenMicrosecondsOrAFifthOfTheLaunch) {
  EXPECT_DOUBLE_EQ(left_work_threshold_ms(0.004), 0.010);
  EXPECT_DOUBLE_EQ(left_work_threshold_ms(0.041), 0.010);
  EXPECT_DOUBLE_EQ(left_work_threshold_ms(1.0), 0.2);
}

TEST(LeftWork, AWaitUnderTheThresholdIsClean) {
  EXPECT_EQ(judge_left_work({{0.041, 0.003}}), LeftWork::Clean);
  EXPECT_EQ(judge_left_work({{1.0, 0.15}}), LeftWork::Clean);
}

// The two false rejections on an H200, each on the first shape of a run: a 41 us launch
// seen busy 12 us after, an 18.5 us launch 19 us after. Measured again, they are idle.
TEST(LeftWork, AOneOffLongWaitIsMeasuredAgainAndThenClean) {
  EXPECT_EQ(judge_left_work({{0.041, 0.012}}), LeftWork::MeasureAgain);
  EXPECT_EQ(judge_left_work({{0.041, 0.012}, {0.041, 0.001}}), LeftWork::Clean);
  EXPECT_EQ(judge_left_work({{0.0185, 0.019}}), LeftWork::MeasureAgain);
  EXPECT_EQ(judge_left_work({{0.0185, 0.019}, {0.0185, 0.021}}), LeftWork::MeasureAgain);
  EXPECT_EQ(judge_left_work({{0.0185, 0.019}, {0.0185, 0.021}, {0.0185, 0.002}}), LeftWork::Clean);
}

// 0.2 ms of spinning left on another stream after a 5 us launch: long every time.
TEST(LeftWork, ALeftoverThatRepeatsIsWorkLeftRunning) {
  const LeftOver spin = {0.005, 0.2};
  EXPECT_EQ(judge_left_work({spin}), LeftWork::MeasureAgain);
  EXPECT_EQ(judge_left_work({spin, spin}), LeftWork::MeasureAgain);
  EXPECT_EQ(judge_left_work({spin, spin, spin}), LeftWork::Running);
  EXPECT_EQ(judge_left_work({spin}, 0), LeftWork::Running);
  EXPECT_EQ(judge_left_work({spin, spin}, 1), LeftWork::Running);
}

TEST(LeftWork, NothingMeasuredYetMeansMeasure) { EXPECT_EQ(judge_left_work({}), LeftWork::MeasureAgain); }

TEST(LeftWork, DescribesEveryMeasurement) {
  EXPECT_EQ(describe_left_work({{0.005, 0.2}}), "200.0 us");
  EXPECT_EQ(describe_left_work({{0.005, 0.2}, {0.005, 0.19}}), "200.0 us, then 190.0 us");
  EXPECT_EQ(describe_left_work({{0.005, 0.2}, {0.005, 0.19}, {0.005, 0.21}}), "200.0 us, then 190.0 us and 210.0 us");
}
