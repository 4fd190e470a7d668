#include "declare/dtype.h"

#include <bit>
#include <cmath>

namespace wb {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "fp32";
    case DType::F16:
      return "fp16";
    case DType::BF16:
      return "bf16";
    case DType::I8:
      return "int8";
    case DType::I32:
      return "int32";
    case DType::I64:
      return "int64";
  }
  return "?";
}

int dtype_size(DType t) {
  switch (t) {
    case DType::F32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::I8:
      return 1;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
  }
  return 0;
}

bool dtype_is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

double unit_roundoff(DType t) {
  switch (t) {
    case DType::F32:
      return std::ldexp(1.0, -24);
    case DType::F16:
      return std::ldexp(1.0, -11);
    case DType::BF16:
      return std::ldexp(1.0, -8);
    case DType::I8:
    case DType::I32:
    case DType::I64:
      return 0.0;
  }
  return 0.0;
}

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
