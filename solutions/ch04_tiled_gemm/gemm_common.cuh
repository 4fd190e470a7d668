// Small pieces every step of the chapter 4 ladder shares: ceiling division, alignment
// tests, guarded float4 loads, and the alpha/beta epilogue.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "device/math.cuh"
#include "device/vec.cuh"

namespace ch04::solution {

using wb::ceil_div;  // grids: harness/device/math.cuh

using wb::aligned16;  // harness/device/vec.cuh

// float4 access to a matrix is allowed when its base is 16-byte aligned and its row
// stride is a multiple of 4 floats: then every row starts 16-byte aligned too.
inline bool vector_ok(const void* base, int ld) { return aligned16(base) && ld % 4 == 0; }

// C[i] = alpha * acc + beta * C[i]; C is not read when beta == 0 (it may hold NaN).
__device__ __forceinline__ void store_scaled(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// Elements [col, col + 4) of a row that has `width` elements, zeros past the end. One
// float4 load when `vec` (the row is 16-byte aligned and col % 4 == 0) and all four
// exist; element by element otherwise.
__device__ __forceinline__ float4 load_row4(const float* row, int col, int width, bool vec) {
  if (vec && col + 3 < width) return *reinterpret_cast<const float4*>(row + col);
  float4 v;
  v.x = col + 0 < width ? row[col + 0] : 0.0f;
  v.y = col + 1 < width ? row[col + 1] : 0.0f;
  v.z = col + 2 < width ? row[col + 2] : 0.0f;
  v.w = col + 3 < width ? row[col + 3] : 0.0f;
  return v;
}

// Writes [col, col + 4) of a row of C that has `width` elements: one float4 access when
// `vec` and all four exist, element by element otherwise.
__device__ __forceinline__ void store_row4(float* row, int col, int width, bool vec, float4 acc, float alpha,
                                           float beta) {
  if (vec && col + 3 < width) {
    float4* p = reinterpret_cast<float4*>(row + col);
    float4 out = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
    if (beta != 0.0f) {
      const float4 old = *p;
      out.x += beta * old.x;
      out.y += beta * old.y;
      out.z += beta * old.z;
      out.w += beta * old.w;
    }
    *p = out;
    return;
  }
  if (col + 0 < width) store_scaled(row + col + 0, acc.x, alpha, beta);
  if (col + 1 < width) store_scaled(row + col + 1, acc.y, alpha, beta);
  if (col + 2 < width) store_scaled(row + col + 2, acc.z, alpha, beta);
  if (col + 3 < width) store_scaled(row + col + 3, acc.w, alpha, beta);
}

}  // namespace ch04::solution
