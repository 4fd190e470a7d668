#include <gtest/gtest.h>

#include "measure/roofline.h"

namespace wb {
namespace {

// H100 SXM: 132 SMs, 1980 MHz boost, HBM3 at 2619 MHz on a 5120-bit bus.
Ceilings h100() { return spec_ceilings(9, 0, 132, 1980000, 2619000, 5120); }

TEST(Roofline, H100SpecNumbersMatchTheDatasheetOrder) {
  const Ceilings c = h100();
  EXPECT_NEAR(c.dram_gbps, 3352, 5);      // datasheet: 3.35 TB/s
  EXPECT_NEAR(c.fp32_tflops, 66.9, 0.5);  // datasheet: 67 TFLOPS
  EXPECT_NEAR(c.bf16_tflops, 1070, 5);    // 4096 FLOPs/clk/SM at the boost clock
  EXPECT_NEAR(c.i8_tops, 2 * c.bf16_tflops, 1);
}

TEST(Roofline, MemoryBoundOpUsesBandwidth) {
  const Ceilings c = h100();
  const double bytes = 12.0 * (1 << 26);
  const double floor_s = bytes / (c.dram_gbps * 1e9);
  EXPECT_NEAR(roofline_pct(bytes, 1 << 26, Peak::FP32, floor_s, c), 100.0, 1e-9);
  EXPECT_NEAR(roofline_pct(bytes, 1 << 26, Peak::FP32, 2 * floor_s, c), 50.0, 1e-9);
}

TEST(Roofline, ComputeBoundOpUsesThePeakOfItsType) {
  const Ceilings c = h100();
  const double flops = 2.0 * 4096.0 * 4096 * 4096;
  const double bytes = 3.0 * 4096 * 4096 * 2;
  const double floor_s = flops / (c.bf16_tflops * 1e12);
  EXPECT_NEAR(roofline_pct(bytes, flops, Peak::BF16Tensor, floor_s, c), 100.0, 1e-9);
  EXPECT_LT(roofline_pct(bytes, flops, Peak::FP32, floor_s, c), 100.0 * 1.01 * 20);  // fp32 peak is lower
  EXPECT_GT(roofline_pct(bytes, flops, Peak::FP32, floor_s, c), 100.0);              // so this is impossible
  EXPECT_TRUE(implausible(roofline_pct(bytes, flops, Peak::FP32, floor_s, c)));
}

TEST(Roofline, UnknownCeilingGivesZero) {
  Ceilings none;
  EXPECT_EQ(roofline_pct(100, 100, Peak::FP32, 1e-3, none), 0.0);
  EXPECT_EQ(roofline_pct(100, 100, Peak::FP32, 0.0, h100()), 0.0);
}

TEST(Roofline, ArchTableHasNoBf16BeforeAmpere) {
  EXPECT_EQ(arch_rates(7, 5).bf16_tensor_flops, 0);
  EXPECT_GT(arch_rates(8, 0).bf16_tensor_flops, 0);
  EXPECT_TRUE(arch_rates(9, 0).known);
  EXPECT_FALSE(arch_rates(12, 3).known);
}

}  // namespace
}  // namespace wb
