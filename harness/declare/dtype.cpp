#include "declare/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "runtime/lookup.h"

namespace wb {

namespace {

// What the harness needs to know about each element type. Unit roundoff is half an ulp at
// 1.0; integer types have none (they must match exactly).
struct Facts {
  std::string_view name;
  int size;  // bytes
  double unit_roundoff;
};
constexpr std::pair<DType, Facts> kFacts[] = {
    {DType::F32, {"fp32", 4, 0x1p-24}},     {DType::F16, {"fp16", 2, 0x1p-11}}, {DType::BF16, {"bf16", 2, 0x1p-8}},
    {DType::I8, {"int8", 1, 0.0}},          {DType::I32, {"int32", 4, 0.0}},    {DType::I64, {"int64", 8, 0.0}},
    {DType::E4M3, {"fp8_e4m3", 1, 0x1p-4}},
};
constexpr Facts kUnknown{"?", 0, 0.0};

}  // namespace

std::string_view dtype_name(DType t) { return lookup(kFacts, t, kUnknown).name; }

int dtype_size(DType t) { return lookup(kFacts, t, kUnknown).size; }

bool dtype_is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::E4M3; }

double unit_roundoff(DType t) { return lookup(kFacts, t, kUnknown).unit_roundoff; }

float bf16_to_float(BFloat16 b) { return std::bit_cast<float>(uint32_t{b.bits} << 16); }

BFloat16 float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return {static_cast<uint16_t>((u >> 16) | 0x40)};  // keep it a quiet NaN
  u += 0x7FFF + ((u >> 16) & 1);                                        // round to nearest even
  return {static_cast<uint16_t>(u >> 16)};
}

float half_to_float(Half h) {
  const uint32_t sign = uint32_t{h.bits & 0x8000u} << 16;
  const int exp = (h.bits >> 10) & 0x1F;
  const uint32_t mant = h.bits & 0x3FF;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // Inf / NaN
  if (exp == 0) {                                                                   // zero / subnormal
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | uint32_t(exp - 15 + 127) << 23 | (mant << 13));
}

Half float_to_half(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  if (std::isnan(f)) return {static_cast<uint16_t>(sign | 0x7E00)};
  const float a = std::fabs(f);
  if (a >= 65520.0f) return {static_cast<uint16_t>(sign | 0x7C00)};  // overflow to Inf
  if (a < std::ldexp(1.0f, -14)) {                                   // subnormal range
    const float scaled = a * std::ldexp(1.0f, 24);                   // in units of 2^-24
    return {static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)))};
  }
  uint32_t bits = (u & 0x7FFFFFFFu) - (uint32_t(127 - 15) << 23);
  bits += 0xFFF + ((bits >> 13) & 1);  // round to nearest even
  return {static_cast<uint16_t>(sign | (bits >> 13))};
}

}  // namespace wb

namespace wb {

float e4m3_to_float(uint8_t bits) {
  const bool negative = bits & 0x80;
  const int exp = (bits >> 3) & 0xF, mant = bits & 0x7;
  if (exp == 0xF && mant == 0x7) return std::numeric_limits<float>::quiet_NaN();
  // Subnormal (exp 0): mant * 2^-9; normal: (8 + mant) * 2^(exp - 10).
  const float v =
      exp == 0 ? std::ldexp(static_cast<float>(mant), -9) : std::ldexp(static_cast<float>(8 + mant), exp - 10);
  return negative ? -v : v;
}

uint8_t double_to_e4m3(double v) {
  if (std::isnan(v)) return 0x7F;
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const double a = std::fabs(v);
  if (a >= 448.0) return sign | 0x7E;  // saturate (finite or not)
  // The spacing of E4M3 values around a: 2^-9 below 2^-6 (subnormals), else 2^(e - 3)
  // in the binade [2^e, 2^(e+1)). Round a / spacing to the nearest integer, ties to even.
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): the binade is [2^(e-1), 2^e)
  const int binade = std::max(e - 1, -6);
  const double step = std::ldexp(1.0, binade - 3);
  const double q = std::nearbyint(a / step);  // ties to even (the default rounding mode)
  // q in [8, 16] for a normal binade (16 carries into the next one), [0, 8] below 2^-6.
  const double r = q * step;
  if (r >= 448.0) return sign | 0x7E;  // rounding up to 448 exactly is fine; past it cannot happen below 448
  if (r == 0.0) return sign;
  int re = 0;
  const double f = std::frexp(r, &re);                                           // r = f * 2^re
  if (re - 1 < -6) return sign | static_cast<uint8_t>(r / std::ldexp(1.0, -9));  // subnormal: mant * 2^-9
  const int field = re - 1 + 7;                                                  // biased exponent
  const int mant = static_cast<int>(f * 16.0) - 8;                               // f in [0.5, 1): 3 bits
  return sign | static_cast<uint8_t>(field << 3 | mant);
}

}  // namespace wb
