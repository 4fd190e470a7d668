// Element types of the book and what the harness needs to know about each.
// Host-only: no CUDA headers, so host tests and tools can use it anywhere.
#pragma once
#include <cstdint>
#include <string_view>

namespace wb {

enum class DType { F32, F16, BF16, I8, I32, I64 };

// Bytes of one element.
int dtype_size(DType t);
// Whether the type is a floating-point type (has NaN and a poison NaN).
bool dtype_is_float(DType t);

std::string_view dtype_name(DType t);

// Unit roundoff (half an ulp at 1.0): 2^-24 for FP32, 2^-11 for FP16, 2^-8 for BF16,
// 0 for integer types (they must match exactly).
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

}  // namespace wb
