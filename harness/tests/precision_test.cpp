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

#include "declare/dtype.h"

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

// The harness's own E4M3 conversions (declare/dtype.h: the test inputs of chapter 5's FP8
// GEMM are drawn through them) agree with CUDA's: every one of the 256 codes decodes to the
// same value, and values across the whole range (ties, subnormals, past 448) round to the
// same code as __nv_fp8_e4m3's saturating constructor.
TEST(PrecisionTable, HarnessE4m3MatchesCuda) {
  for (int code = 0; code < 256; ++code) {
    __nv_fp8_e4m3 x;
    x.__x = static_cast<__nv_fp8_storage_t>(code);
    const float cuda = static_cast<float>(x), mine = wb::e4m3_to_float(static_cast<uint8_t>(code));
    if (std::isnan(cuda)) {
      EXPECT_TRUE(std::isnan(mine)) << "code " << code;
    } else {
      EXPECT_EQ(mine, cuda) << "code " << code;
      // Decoding then encoding gives the code back (but -0 and +0 are two codes of one value).
      if (code != 0x80) EXPECT_EQ(wb::double_to_e4m3(cuda), code) << "code " << code;
    }
  }
  for (double v = -600.0; v <= 600.0; v += 0.0625 * 0.37) {
    for (double scale : {1.0, 1.0 / 64, 1.0 / 512, 1.0 / 4096}) {
      const double x = v * scale;
      EXPECT_EQ(wb::double_to_e4m3(x), __nv_fp8_e4m3(x).__x) << "x = " << x;
    }
  }
  for (int code = 1; code < 0x7E; ++code) {  // the exact midpoints between neighbours: ties to even
    const double mid = 0.5 * (double(wb::e4m3_to_float(uint8_t(code))) + wb::e4m3_to_float(uint8_t(code + 1)));
    EXPECT_EQ(wb::double_to_e4m3(mid), __nv_fp8_e4m3(mid).__x) << "midpoint " << mid;
  }
  EXPECT_EQ(wb::double_to_e4m3(1.0e9), 0x7E);  // saturates, as cvt.rn.satfinite does
  EXPECT_EQ(wb::double_to_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(wb::double_to_e4m3(NAN), 0x7F);
}

}  // namespace
