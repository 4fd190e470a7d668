// v1 — direct convolution, one thread per output (the plain answer to exercise 1).
//
// What it shows: the output index split into (n, k, p, q) with q fastest, so neighbouring
// threads write neighbouring outputs (coalesced stores) and read neighbouring inputs at
// stride 1 (stride `stride` when it is 2); the padding as a bounds test on the input index,
// not as memory; every offset in 64 bits (x passes 2^31 elements in the large case).
// Why it is slow: every thread reads C x R x S inputs and as many weights from global
// memory (through L1/L2) for 2 FLOPs each; v2 stages them in shared memory.
//
// Run: ctest --preset ch10-solution -R conv2d/f32/v1_direct
//      build/ch10/bin/ch10_bench --benchmark_filter=conv2d/f32
#include <cstdint>

#include "device/math.cuh"
#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch10::solution {
namespace {

constexpr int kThreads = 256;

__global__ void direct_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                              ConvShape s, int P, int Q, int64_t total) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int q = int(i % Q);
  const int p = int(i / Q % P);
  const int k = int(i / (int64_t(Q) * P) % s.K);
  const int64_t n = i / (int64_t(Q) * P * s.K);
  const int h0 = p * s.stride - s.pad, v0 = q * s.stride - s.pad;
  float acc = 0.0f;
  for (int c = 0; c < s.C; ++c) {
    const float* xc = x + (n * s.C + c) * int64_t(s.H) * s.W;  // x[n][c], an H x W plane
    const float* wc = w + (int64_t(k) * s.C + c) * s.R * s.S;  // w[k][c], an R x S filter
    for (int r = 0; r < s.R; ++r) {
      const int h = h0 + r;
      if (h < 0 || h >= s.H) continue;  // a row of padding
      for (int t = 0; t < s.S; ++t) {
        const int v = v0 + t;
        if (v < 0 || v >= s.W) continue;
        acc = fmaf(xc[int64_t(h) * s.W + v], wc[r * s.S + t], acc);
      }
    }
  }
  y[i] = acc;
}

}  // namespace

void v1_direct(const float* x, const float* w, float* y, ConvShape s, cudaStream_t stream) {
  require_valid(s);
  const int P = s.P(), Q = s.Q();
  const int64_t total = int64_t(s.N) * s.K * P * Q;
  direct_kernel<<<unsigned(wb::ceil_div(total, int64_t{kThreads})), kThreads, 0, stream>>>(x, w, y, s, P, Q, total);
  WB_CHECK_LAUNCH();
}

}  // namespace ch10::solution
