// Integer arithmetic of grids and buffers, for host and device code alike.
//
// Chapter 1 teaches it: a launch of blocks of `threads` threads must cover every one of n
// elements, so the grid has ceil(n / threads) blocks, and the last block's threads past n
// must not touch memory. Every later chapter computes its grids with ceil_div.
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

}  // namespace wb
