// v3 — 16-byte accesses and more bytes in flight per thread: the version that reaches the
// copy bandwidth.
//
// What changes over v1, and why it is faster:
//   * float4 loads and stores: one instruction moves 16 bytes, so a warp moves 512 bytes
//     per instruction instead of 128; four times fewer instructions for the same bytes.
//   * each thread loads kUnroll float4 of A and of B before it adds and stores any of them:
//     8 independent 16-byte loads in flight per thread keep the memory system busy, which
//     is what hides DRAM latency (Little's law: bytes in flight = bandwidth x latency).
//   * the tail (n not a multiple of 4) is done element by element by the last block.
// float4 needs 16-byte aligned addresses: cudaMalloc gives 256, and the launcher falls
// back to v1 for any pointer, width or leading dimension that breaks the alignment.
//
// Run: build/ch01/bin/ch01_bench --impl=v3_vectorized,reference
#include <cstdint>

#include "runtime/errors.cuh"
#include "device/math.cuh"
#include "device/vec.cuh"
#include "ladder.cuh"

namespace ch01::solution {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // float4 per thread per input

__device__ __forceinline__ float4 add4(float4 x, float4 y) {
  return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

// Block b handles float4 number [b * kThreads * kUnroll, (b + 1) * kThreads * kUnroll):
// thread t takes t, t + kThreads, ... so each of the kUnroll loads is coalesced.
__global__ void __launch_bounds__(kThreads) vector_add4_kernel(const float* a, const float* b, float* c, int n) {
  const int n4 = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* c4 = reinterpret_cast<float4*>(c);
  const int base = blockIdx.x * kThreads * kUnroll + threadIdx.x;
  float4 ra[kUnroll], rb[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int j = base + u * kThreads;
    if (j < n4) {
      ra[u] = a4[j];
      rb[u] = b4[j];
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int j = base + u * kThreads;
    if (j < n4) c4[j] = add4(ra[u], rb[u]);
  }
  // The last 0..3 elements that do not fill a float4.
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < n % 4) {
    const int i = n4 * 4 + threadIdx.x;
    c[i] = a[i] + b[i];
  }
}

// One row segment of 4 pixels per thread; rows are independent, so y indexes rows directly.
__global__ void rgb_to_grey4_kernel(const float* rgb, float* grey, int height, int width4, int pitch) {
  const int x4 = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x4 >= width4 || y >= height) return;
  const size_t plane4 = static_cast<size_t>(height) * pitch / 4;
  const size_t at4 = static_cast<size_t>(y) * (pitch / 4) + x4;
  const float4* in = reinterpret_cast<const float4*>(rgb);
  const float4 r = in[at4], g = in[plane4 + at4], b = in[2 * plane4 + at4];
  reinterpret_cast<float4*>(grey)[at4] = make_float4(kRedWeight * r.x + kGreenWeight * g.x + kBlueWeight * b.x,
                                                     kRedWeight * r.y + kGreenWeight * g.y + kBlueWeight * b.y,
                                                     kRedWeight * r.z + kGreenWeight * g.z + kBlueWeight * b.z,
                                                     kRedWeight * r.w + kGreenWeight * g.w + kBlueWeight * b.w);
}

__global__ void matrix_add4_kernel(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows,
                                   int cols4) {
  const int col4 = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= rows || col4 >= cols4) return;
  const float4 x = reinterpret_cast<const float4*>(a + static_cast<size_t>(row) * lda)[col4];
  const float4 y = reinterpret_cast<const float4*>(b + static_cast<size_t>(row) * ldb)[col4];
  reinterpret_cast<float4*>(c + static_cast<size_t>(row) * ldc)[col4] = add4(x, y);
}

using wb::aligned16;  // p % 16 == 0: float4 access allowed (harness/device/vec.cuh)
using wb::ceil_div;   // a / b rounded up without overflow near 2^31 (harness/device/math.cuh)

}  // namespace

void v3_vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  if (n == 0) return;
  if (!aligned16(a) || !aligned16(b) || !aligned16(c)) return v1_vector_add(a, b, c, n, stream);
  const int blocks = std::max(1, ceil_div(n / 4, kThreads * kUnroll));
  vector_add4_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

void v3_rgb_to_grey(const float* rgb, float* grey, int height, int width, int pitch, cudaStream_t stream) {
  if (height == 0 || width == 0) return;
  if (width % 4 != 0 || pitch % 4 != 0 || !aligned16(rgb) || !aligned16(grey)) {
    return v1_rgb_to_grey(rgb, grey, height, width, pitch, stream);
  }
  const dim3 block(64, 4);
  const dim3 grid(ceil_div(width / 4, block.x), ceil_div(height, block.y));
  rgb_to_grey4_kernel<<<grid, block, 0, stream>>>(rgb, grey, height, width / 4, pitch);
  WB_CHECK_LAUNCH();
}

void v3_matrix_add(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int rows, int cols,
                   cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  // Packed rows: the matrix is one long vector.
  if (lda == cols && ldb == cols && ldc == cols && static_cast<int64_t>(rows) * cols <= INT32_MAX) {
    return v3_vector_add(a, b, c, rows * cols, stream);
  }
  if (cols % 4 != 0 || lda % 4 != 0 || ldb % 4 != 0 || ldc % 4 != 0 || !aligned16(a) || !aligned16(b) ||
      !aligned16(c)) {
    return v1_matrix_add(a, lda, b, ldb, c, ldc, rows, cols, stream);
  }
  const dim3 block(64, 4);
  const dim3 grid(ceil_div(cols / 4, block.x), ceil_div(rows, block.y));
  matrix_add4_kernel<<<grid, block, 0, stream>>>(a, lda, b, ldb, c, ldc, rows, cols / 4);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01::solution
