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

// with_bucket for the rows of a: the bucket of their length, and whether every row of x, r,
// gamma, beta, h and y allows 16-byte packs.
template <class T, class F>
bool with_row_bucket(const RowArgs<T>& a, F&& f) {
  const int nv = ceil_div(a.C, Pack<T>::kN);
  const bool vec = rows_aligned<T>(a.ld, {a.x, a.r, a.gamma, a.beta, a.h, a.y});
  return with_bucket(nv, vec, f);
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

// This thread's packs of gamma and, for LayerNorm, of beta: the same columns in every row.
template <class T, Norm kNorm, int kG, int kV, bool kVec>
__device__ __forceinline__ void load_params(Pack<T> (&g)[kV], Pack<T> (&b)[kV], const RowArgs<T> a, int t) {
  load_packs<T, kG, kV, kVec>(g, a.gamma, 0, 0, a.C, t);
  if constexpr (kNorm == Norm::Layer) load_packs<T, kG, kV, kVec>(b, a.beta, 0, 0, a.C, t);
}

// Row n's output from the registers: y = the normalised row, and from thread 0 of the group
// the row's mean and rstd (store_stats).
template <class T, Norm kNorm, int kG, int kV, bool kVec>
__device__ __forceinline__ void write_row(Pack<T> (&v)[kV], const Pack<T> (&g)[kV], const Pack<T> (&b)[kV], float mean,
                                          float rstd, const RowArgs<T> a, int n, int t) {
  normalise<kNorm>(v, g, b, mean, rstd);
  store_packs<T, kG, kV, kVec>(v, a.y, n, a.ld, a.C, t);
  if (t == 0) store_stats<kNorm>(a.mean, a.rstd, n, mean, rstd);
}

// The three ops of step `step` (v4, v6), each a RowArgs for `launch`, which is
// launch<T, kNorm, kResidual>(args, stream) -> false when the row is too long for it; v2's
// kernel takes those rows. Defines step_layernorm_f32, step_residual_layernorm and
// step_residual_rmsnorm (ladder.cuh).
#define CH06_ROW_STEP(step, launch)                                                                                    \
  void step##_layernorm_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd, \
                            int N, int C, int ld, float eps, cudaStream_t stream) {                                    \
    if (N == 0) return;                                                                                                \
    const RowArgs<float> a{x, nullptr, gamma, beta, nullptr, y, mean, rstd, N, C, ld, eps};                            \
    if (!launch<float, Norm::Layer, false>(a, stream)) {                                                               \
      v2_layernorm_f32(x, gamma, beta, y, mean, rstd, N, C, ld, eps, stream);                                          \
    }                                                                                                                  \
  }                                                                                                                    \
  void step##_residual_layernorm(const bf16* x, const bf16* r, const bf16* gamma, const bf16* beta, bf16* h, bf16* y,  \
                                 float* mean, float* rstd, int N, int C, int ld, float eps, cudaStream_t stream) {     \
    if (N == 0) return;                                                                                                \
    const RowArgs<bf16> a{x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps};                                         \
    if (!launch<bf16, Norm::Layer, true>(a, stream)) {                                                                 \
      v2_residual_layernorm(x, r, gamma, beta, h, y, mean, rstd, N, C, ld, eps, stream);                               \
    }                                                                                                                  \
  }                                                                                                                    \
  void step##_residual_rmsnorm(const bf16* x, const bf16* r, const bf16* gamma, bf16* h, bf16* y, float* rstd, int N,  \
                               int C, int ld, float eps, cudaStream_t stream) {                                        \
    if (N == 0) return;                                                                                                \
    const RowArgs<bf16> a{x, r, gamma, nullptr, h, y, nullptr, rstd, N, C, ld, eps};                                   \
    if (!launch<bf16, Norm::Rms, true>(a, stream)) {                                                                   \
      v2_residual_rmsnorm(x, r, gamma, h, y, rstd, N, C, ld, eps, stream);                                             \
    }                                                                                                                  \
  }

}  // namespace ch06::solution
