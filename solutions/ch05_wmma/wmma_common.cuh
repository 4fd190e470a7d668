// Pieces the WMMA steps (v1-v4) share: fragment types, the shared-memory "panel" layout,
// tile loaders, the epilogue that writes a 16 x 16 accumulator tile to D, and the warp tile
// of several fragments (v3, v4: its reset, its 16-deep step, its epilogue).
#pragma once
#include <mma.h>

#include <cstdint>

#include "ch05.cuh"
#include "runtime/errors.cuh"

namespace ch05::solution {

// The element type WMMA fragments use for an input type (INT8 fragments are signed char).
template <class In>
struct FragmentElement {
  using type = In;
};
template <>
struct FragmentElement<int8_t> {
  using type = signed char;
};
template <class In>
using frag_t = typename FragmentElement<In>::type;

// Elements in one 16-byte vector of In: 8 for the 16-bit types, 16 for INT8.
template <class In>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(In));

// --- the panel layout ----------------------------------------------------------------
// A (rows x BK) tile of A is kept as BK / 16 panels, each `rows` rows of 16 elements; a
// (BK x cols) tile of B as cols / 16 panels of BK rows of 16 elements. Each panel row is
// padded by 16 bytes, so
//   * every 16 x 16 fragment starts on a 32-byte boundary, as WMMA requires, for every
//     element type (an INT8 fragment 16 columns into a plain row would start 16 bytes in);
//   * ldm (kPanelRow) is a multiple of 16 bytes;
//   * consecutive rows start 48 (16-bit) or 32 (INT8) bytes apart, which spreads a
//     fragment load's eight 16-byte row pieces over distinct banks.
template <class In>
inline constexpr int kPanelRow = 16 + kVec<In>;  // elements per padded panel row

// Offset (in elements) of A-tile element (r, k) and of B-tile element (k, c).
template <class In, int BM>
__device__ __forceinline__ int a_panel(int r, int k) {
  return (k / 16) * BM * kPanelRow<In> + r * kPanelRow<In> + k % 16;
}
template <class In, int BK>
__device__ __forceinline__ int b_panel(int k, int c) {
  return (c / 16) * BK * kPanelRow<In> + k * kPanelRow<In> + c % 16;
}

// Element-by-element tile loads, zeros outside the matrix: right for every shape.
template <class In, int BM, int BK, int THREADS>
__device__ __forceinline__ void load_a_scalar(In* sA, const In* A, int M, int K, int row0, int k0) {
  for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
    const int r = e / BK, k = e % BK, gr = row0 + r, gk = k0 + k;
    sA[a_panel<In, BM>(r, k)] = (gr < M && gk < K) ? A[size_t(gr) * K + gk] : zero<In>();
  }
}
template <class In, int BK, int BN, int THREADS>
__device__ __forceinline__ void load_b_scalar(In* sB, const In* B, int K, int N, int k0, int col0) {
  for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
    const int k = e / BN, c = e % BN, gk = k0 + k, gc = col0 + c;
    sB[b_panel<In, BK>(k, c)] = (gk < K && gc < N) ? B[size_t(gk) * N + gc] : zero<In>();
  }
}

// 16-byte loads. Needs K (for A) and N (for B) to be multiples of kVec<In>, so that each
// 16-byte piece of a row lies wholly inside the matrix or wholly outside it.
// The (ROWS x COLS) tile of X (rows x cols, row-major) at (r0, c0), element (r, c) stored
// at s + offset(r, c); zeros outside X.
template <class In, int ROWS, int COLS, int THREADS, class Offset>
__device__ __forceinline__ void load_tile_vec(In* s, const In* X, int rows, int cols, int r0, int c0, Offset offset) {
  constexpr int kPerRow = COLS / kVec<In>;
  for (int i = threadIdx.x; i < ROWS * kPerRow; i += THREADS) {
    const int r = i / kPerRow, c = (i % kPerRow) * kVec<In>, gr = r0 + r, gc = c0 + c;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (gr < rows && gc < cols) v = *reinterpret_cast<const uint4*>(X + size_t(gr) * cols + gc);
    *reinterpret_cast<uint4*>(s + offset(r, c)) = v;
  }
}
template <class In, int BM, int BK, int THREADS>
__device__ __forceinline__ void load_a_vec(In* sA, const In* A, int M, int K, int row0, int k0) {
  load_tile_vec<In, BM, BK, THREADS>(sA, A, M, K, row0, k0, a_panel<In, BM>);
}
template <class In, int BK, int BN, int THREADS>
__device__ __forceinline__ void load_b_vec(In* sB, const In* B, int K, int N, int k0, int col0) {
  load_tile_vec<In, BK, BN, THREADS>(sB, B, K, N, k0, col0, b_panel<In, BK>);
}

// True when 16-byte loads are allowed: row lengths multiples of 16 bytes, bases aligned.
template <class In>
inline bool rows_aligned(const In* A, const In* B, int N, int K) {
  return K % kVec<In> == 0 && N % kVec<In> == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(B) % 16 == 0;
}

// --- the epilogue --------------------------------------------------------------------
// One warp writes a 16 x 16 accumulator tile, first stored row-major into `scratch`
// (256 accumulators, 32-byte aligned, the warp's own), to D at (row0, col0): C added in the
// accumulator type, the sum rounded once to Out, elements outside M x N skipped.
template <class In, class Out>
__device__ __forceinline__ void write_tile(
    const nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, acc_t<In>>& acc, acc_t<In>* scratch, int row0,
    int col0, int M, int N, const Out* C, Out* D) {
  nvcuda::wmma::store_matrix_sync(scratch, acc, 16, nvcuda::wmma::mem_row_major);
  __syncwarp();
  const int lane = threadIdx.x % 32;
  for (int e = lane; e < 256; e += 32) {  // the warp writes two 16-element row pieces per pass
    const int r = row0 + e / 16, c = col0 + e % 16;
    if (r < M && c < N) {
      const size_t at = size_t(r) * N + c;
      acc_t<In> v = scratch[e];
      if (C != nullptr) v += to_acc<acc_t<In>>(C[at]);
      D[at] = to_out<Out>(v);
    }
  }
  __syncwarp();  // the scratch is free again
}

// The launch of a block-tiled step (v2, v3): nothing for an empty D; else launch(grid) with
// one block per (BM x BN) tile of D, and the launch checked.
template <int BM, int BN, class Launch>
void launch_block_tiles(int M, int N, Launch&& launch) {
  if (M <= 0 || N <= 0) return;
  launch(dim3((N + BN - 1) / BN, (M + BM - 1) / BM));
  WB_CHECK_LAUNCH();
}

// --- a warp tile of FM x FN fragments (v3, v4) -------------------------------------------
template <class In>
using AccFragment = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, acc_t<In>>;

// Every accumulator fragment of the warp tile to zero.
template <class In, int FM, int FN>
__device__ __forceinline__ void zero_tiles(AccFragment<In> (&acc)[FM][FN]) {
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) nvcuda::wmma::fill_fragment(acc[i][j], acc_t<In>(0));
}

// The fragments of A and of B one k step of a warp tile reads (v3, v4).
template <class In>
using AFragment = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, frag_t<In>, nvcuda::wmma::row_major>;
template <class In>
using BFragment = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, frag_t<In>, nvcuda::wmma::row_major>;

// One (BM x BK) tile of A and (BK x BN) tile of B in shared memory, as panels, into the warp
// tile (v3, v4): for each 16-deep k step, the warp's FM fragments of A (rows wm * WM ...)
// into a and FN of B (columns wn * WN ...) into b, then their FM x FN products.
template <class In, int BM, int BK, int WM, int WN, int FM, int FN>
__device__ __forceinline__ void mma_warp_tile(AccFragment<In> (&acc)[FM][FN], AFragment<In> (&a)[FM],
                                              BFragment<In> (&b)[FN], const In* a_tile, const In* b_tile, int wm,
                                              int wn) {
  using E = frag_t<In>;
  constexpr int ld = kPanelRow<In>;
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
    for (int i = 0; i < FM; ++i) {
      nvcuda::wmma::load_matrix_sync(
          a[i], reinterpret_cast<const E*>(a_tile + a_panel<In, BM>(wm * WM + i * 16, kk * 16)), ld);
    }
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      nvcuda::wmma::load_matrix_sync(
          b[j], reinterpret_cast<const E*>(b_tile + b_panel<In, BK>(kk * 16, wn * WN + j * 16)), ld);
    }
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) nvcuda::wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
  }
}

// The warp tile to D at (row0, col0), one fragment at a time through the warp's scratch.
template <class In, class Out, int FM, int FN>
__device__ __forceinline__ void write_tiles(const AccFragment<In> (&acc)[FM][FN], acc_t<In>* scratch, int row0,
                                            int col0, int M, int N, const Out* C, Out* D) {
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      write_tile<In, Out>(acc[i][j], scratch, row0 + i * 16, col0 + j * 16, M, N, C, D);
    }
}

}  // namespace ch05::solution
