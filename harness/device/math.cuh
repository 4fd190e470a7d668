// Integer arithmetic of grids and buffers, for host and device code alike, and the fast
// exponential of the softmax kernels.
//
// Chapter 1 teaches the integer part: a launch of blocks of `threads` threads must cover every one of n
// elements, so the grid has ceil(n / threads) blocks, and the last block's threads past n
// must not touch memory. The later chapters' launchers compute their grids with ceil_div.
#pragma once
#include <type_traits>

namespace wb {

// ceil(a / b) for a >= 0 and b > 0, in the common type of a and b (int for two ints).
// Not (a + b - 1) / b: for an `a` near the type's largest value that sum overflows (an int n
// of 2^31 - 1 elements, which chapter 1's tests launch, would wrap to a negative grid).
template <class A, class B>
__host__ __device__ constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
  return a / b + (a % b != 0);
}

// a rounded up to a multiple of b (a >= 0, b > 0): the size of a buffer carved from a larger
// one so that the next one starts aligned, or a dimension padded to a whole tile.
template <class A, class B>
__host__ __device__ constexpr std::common_type_t<A, B> round_up(A a, B b) {
  return ceil_div(a, b) * b;
}

#if defined(__CUDACC__)
// 2^x on the special-function unit alone (ex2.approx.ftz). exp2f() compiles to the form that
// keeps results below 2^-126 as denormals: a compare and two multiplies around every MUFU.EX2,
// three more instructions per element in a softmax whose other work is about four. A weight
// that small counts for nothing beside the row's largest (1), so the softmax kernels flush it to
// 0; 2^-inf = 0, as masked scores need. Chapter 8 introduces it (the flash kernels' online
// softmax); chapter 7's v7 takes its row sums with it.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#endif

}  // namespace wb
