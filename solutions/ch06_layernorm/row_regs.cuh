// A row held in registers: the pieces v4, v5 and v6 share.
//
// A row of C elements is cut into nv = ceil(C / kN) packs of 16 bytes (kN = 8 BF16 or 4
// floats). A group of kG threads owns the row; thread t of the group holds packs
//
//   j = t, t + kG, t + 2 kG, ..., t + (kV - 1) kG          (kV packs: a compile-time count)
//
// so a warp's i-th load is 32 consecutive packs, 512 contiguous bytes, and the register
// array is indexed only by the unrolled constant i (a runtime index would put it in local
// memory). Packs past the row are zero and masked; the last pack of a row may be partial
// (C % kN elements). Rows that start misaligned (kVec false) load and store every pack
// element by element, into the same registers.
//
// The bucket (kG threads per row, kRows rows per block, kV packs per thread) follows the
// row length, so that kV stays at 4 or below (the registers a thread spends on the row):
//
//   packs per row nv   (BF16 C)          kG x kRows   kV
//   <= 32              <= 256            32 x 4       1      a warp per row, no barrier
//   <= 64              <= 512            32 x 4       2
//   <= 128             <= 1024           32 x 4       4
//   <= 256             <= 2048           64 x 1       4      a block per row
//   <= 512             <= 4096          128 x 1       4
//   <= 1024            <= 8192          256 x 1       4
//   <= 2048            <= 16384         512 x 1       4
//   <= 4096            <= 32768        1024 x 1       4
//   longer                              v2's kernel (three passes through memory)
#pragma once
#include "norm_common.cuh"

namespace ch06::solution {

// Everything a row kernel needs, passed by value (x, r, h may be null when unused).
template <class T>
struct RowArgs {
  const T* x;
  const T* r;
  const T* gamma;
  const T* beta;
  T* h;
  T* y;
  float* mean;
  float* rstd;
  int N, C, ld;
  float eps;
};

// Calls f.template operator()<kG, kRows, kV, kVec>() for a row of nv packs; false when
// the row is longer than any bucket holds.
template <class F>
bool with_bucket(int nv, bool vec, F&& f) {
  auto go = [&]<int kG, int kRows, int kV>() {
    if (vec)
      f.template operator()<kG, kRows, kV, true>();
    else
      f.template operator()<kG, kRows, kV, false>();
    return true;
  };
  if (nv <= 32) return go.template operator()<32, 4, 1>();
  if (nv <= 64) return go.template operator()<32, 4, 2>();
  if (nv <= 128) return go.template operator()<32, 4, 4>();
  if (nv <= 256) return go.template operator()<64, 1, 4>();
  if (nv <= 512) return go.template operator()<128, 1, 4>();
  if (nv <= 1024) return go.template operator()<256, 1, 4>();
  if (nv <= 2048) return go.template operator()<512, 1, 4>();
  if (nv <= 4096) return go.template operator()<1024, 1, 4>();
  return false;
}

// How many elements of pack j lie inside a row of C (0 .. kN).
template <class T>
__device__ __forceinline__ int pack_len(int j, int C) {
  constexpr int kN = Pack<T>::kN;
  return min(max(C - j * kN, 0), kN);
}

// Loads this thread's packs of row n of p (x, r, gamma, ...; ld = 0 for gamma and beta).
template <class T, int kG, int kV, bool kVec>
__device__ __forceinline__ void load_packs(Pack<T> (&v)[kV], const T* p, int n, int ld, int C, int t) {
  constexpr int kN = Pack<T>::kN;
  const T* row = p + static_cast<size_t>(n) * ld;
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    const int j = t + i * kG;
    const int m = pack_len<T>(j, C);
    if (m > 0)
      v[i].load(row + j * kN, m, kVec && m == kN);
    else
      v[i].zero();
  }
}

template <class T, int kG, int kV, bool kVec>
__device__ __forceinline__ void store_packs(const Pack<T> (&v)[kV], T* p, int n, int ld, int C, int t) {
  constexpr int kN = Pack<T>::kN;
  T* row = p + static_cast<size_t>(n) * ld;
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    const int j = t + i * kG;
    const int m = pack_len<T>(j, C);
    if (m > 0) v[i].store(row + j * kN, m, kVec && m == kN);
  }
}

// h = T(x + r), in place in xv (rounded once: the statistics then see h as rounded).
template <class T, int kV>
__device__ __forceinline__ void add_residual(Pack<T> (&xv)[kV], const Pack<T> (&rv)[kV]) {
  constexpr int kN = Pack<T>::kN;
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    float s[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) s[k] = xv[i].get(k) + rv[i].get(k);
    xv[i].set(s);
  }
}

// This thread's sum of its elements (LayerNorm) or of their squares (RMSNorm). The zero
// padding of partial and absent packs adds nothing to either.
template <Norm kNorm, class T, int kV>
__device__ __forceinline__ float first_moment(const Pack<T> (&v)[kV]) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kV; ++i) {
#pragma unroll
    for (int k = 0; k < Pack<T>::kN; ++k) {
      const float e = v[i].get(k);
      s = kNorm == Norm::Layer ? s + e : fmaf(e, e, s);
    }
  }
  return s;
}

// This thread's sum of (e - mean)^2 over its elements inside the row: here the padding
// must be masked, since (0 - mean)^2 is not 0.
template <class T, int kG, int kV>
__device__ __forceinline__ float centred_square_sum(const Pack<T> (&v)[kV], float mean, int C, int t) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    const int m = pack_len<T>(t + i * kG, C);
#pragma unroll
    for (int k = 0; k < Pack<T>::kN; ++k) {
      const float d = v[i].get(k) - mean;
      s = k < m ? fmaf(d, d, s) : s;
    }
  }
  return s;
}

// y = (v - mean) * rstd * gamma (+ beta), rounded once to T, in place in v.
template <Norm kNorm, class T, int kV>
__device__ __forceinline__ void normalise(Pack<T> (&v)[kV], const Pack<T> (&g)[kV], const Pack<T> (&b)[kV], float mean,
                                          float rstd) {
  constexpr int kN = Pack<T>::kN;
#pragma unroll
  for (int i = 0; i < kV; ++i) {
    float o[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      o[k] = (v[i].get(k) - mean) * rstd * g[i].get(k);
      if constexpr (kNorm == Norm::Layer) o[k] += b[i].get(k);
    }
    v[i].set(o);
  }
}

}  // namespace ch06::solution
