// Element types of the book and what the harness needs to know about each.
// Host-only: no CUDA headers, so host tests and tools can use it anywhere.
#pragma once
#include <cstdint>
#include <string_view>

namespace wb {

// E4M3: FP8 with 4 exponent and 3 mantissa bits (chapter 5's FP8 GEMM inputs): largest 448,
// no infinity, one NaN pattern per sign (0x7F, 0xFF).
enum class DType { F32, F16, BF16, I8, I32, I64, E4M3 };

// Bytes of one element.
int dtype_size(DType t);
// Whether the type is a floating-point type (has NaN and a poison NaN).
bool dtype_is_float(DType t);

std::string_view dtype_name(DType t);

// Unit roundoff (half an ulp at 1.0): 2^-24 for FP32, 2^-11 for FP16, 2^-8 for BF16,
// 2^-4 for E4M3, 0 for integer types (they must match exactly).
double unit_roundoff(DType t);

// Host-side storage for the 16-bit float types (the bits, nothing more), so host code
// never needs cuda_fp16.h / cuda_bf16.h.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

float half_to_float(Half h);
Half float_to_half(float f);  // round to nearest even
float bf16_to_float(BFloat16 b);
BFloat16 float_to_bf16(float f);  // round to nearest even
// FP8 E4M3 (the OCP "E4M3FN" form CUDA's __nv_fp8_e4m3 holds): exponent bias 7, subnormals
// down to 2^-9, largest finite 448 (0x7E), NaN 0x7F / 0xFF, no infinity.
float e4m3_to_float(uint8_t bits);
// Round to nearest even, saturating: finite values past 448 (and infinities) become +-448,
// as cvt.rn.satfinite and the __nv_fp8_e4m3 constructor do; NaN becomes 0x7F. From double,
// so that a value is rounded once (no double rounding through float).
uint8_t double_to_e4m3(double v);

}  // namespace wb
