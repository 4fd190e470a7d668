// The precision table of docs/precision.md, checked: each format's largest finite value and
// its epsilon (the gap from 1 to the next value up), from the CUDA headers' own host
// conversions, and the overflow example the page shows (FP16 against BF16's range).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {

float via_fp16(float x) { return __half2float(__float2half_rn(x)); }
float via_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
float via_e4m3(float x) { return static_cast<float>(__nv_fp8_e4m3(x)); }
float via_e5m2(float x) { return static_cast<float>(__nv_fp8_e5m2(x)); }
// TF32 keeps 10 of FP32's 23 mantissa bits (round to nearest, ties away, as cvt.rna.tf32 does).
float via_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & ~0x1FFFu;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST(PrecisionTable, LargestFiniteValues) {
  EXPECT_EQ(via_fp16(65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(via_fp16(65520.0f)));  // halfway to the next binade: rounds to inf
  EXPECT_EQ(via_bf16(3.3895314e38f), 3.3895314e38f);
  EXPECT_EQ(via_e4m3(448.0f), 448.0f);
  EXPECT_EQ(via_e4m3(1.0e4f), 448.0f);  // E4M3 has no inf: the conversion saturates
  EXPECT_EQ(via_e5m2(57344.0f), 57344.0f);
  EXPECT_EQ(std::numeric_limits<float>::max(), 3.4028235e38f);
}

TEST(PrecisionTable, Epsilons) {
  // 1 + eps is the next value after 1; 1 + eps / 2 rounds back to 1 (ties to even).
  EXPECT_EQ(via_fp16(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
  EXPECT_EQ(via_fp16(1.0f + 0x1p-11f), 1.0f);
  EXPECT_EQ(via_bf16(1.0f + 0x1p-7f), 1.0f + 0x1p-7f);
  EXPECT_EQ(via_bf16(1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(via_tf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
  EXPECT_EQ(via_tf32(1.0f + 0x1p-12f), 1.0f);
  EXPECT_EQ(via_e4m3(1.125f), 1.125f);  // 3 mantissa bits: eps 2^-3
  EXPECT_EQ(via_e4m3(1.0625f), 1.0f);
  EXPECT_EQ(via_e5m2(1.25f), 1.25f);  // 2 mantissa bits: eps 2^-2
  EXPECT_EQ(via_e5m2(1.125f), 1.0f);
}

// A LayerNorm's sum of squares over 768 activations of size 10 is 76,800: past FP16's
// 65,504, so a sum kept in FP16 is inf; BF16 has FP32's exponent and holds it.
TEST(PrecisionTable, Fp16OverflowsWhereBf16Holds) {
  float sum16 = 0.0f, sum_bf16 = 0.0f;
  for (int i = 0; i < 768; ++i) {
    sum16 = via_fp16(sum16 + via_fp16(10.0f * 10.0f));
    sum_bf16 = via_bf16(sum_bf16 + via_bf16(10.0f * 10.0f));
  }
  EXPECT_TRUE(std::isinf(sum16));
  EXPECT_TRUE(std::isfinite(sum_bf16));
  // ... but with 8 bits of mantissa the BF16 sum stalls: once it reaches 2^15, adding 100
  // is less than half a step (256) and the sum stops growing. FP32 accumulation is the rule.
  EXPECT_EQ(sum_bf16, 32768.0f);  // against 76,800: less than half the true sum
}

}  // namespace
