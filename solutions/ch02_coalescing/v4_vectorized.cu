// v4 — coarsened and vectorized: each thread moves 16 elements with 4-wide loads and stores.
//
// What changes over v3, and why it is faster:
//   * More bytes in flight. A v3 thread has one load outstanding, then waits at the barrier.
//     Here each thread issues four independent 4-element vector loads (64 bytes for FP32)
//     before it touches shared memory. DRAM answers after several hundred nanoseconds, so
//     the bandwidth a GPU reaches is about (bytes in flight) / latency (Little's law): more
//     loads in flight per thread is what closes the gap to the copy bandwidth.
//   * A quarter of the instructions: one 16-byte access moves what took four 4-byte ones,
//     and a block of 256 threads covers a 64 x 64 tile, so index math and barriers are paid
//     once per 16 elements instead of once per element.
//   * The tile turns through registers: a thread reads a 4 x 4 block of the tile as four row
//     vectors, swaps the 16 values among its registers, and writes four column vectors,
//     which are rows of `out`: vector stores on the way out too.
//   * A swizzle instead of a pad. A padded row would break the 16-byte alignment vector
//     accesses need, so the tile stays 64 x 64 and each row stores its 16 four-element
//     chunks in a permuted order: chunk j of tile row r sits at position j ^ ((r / 4) % 16).
//     The 4 x 4 reads walk down the tile four rows at a time; the XOR sends every
//     4-row group to a different position, so the eight 16-byte reads a quarter-warp issues
//     together use all 32 banks once (BF16: 8-byte vectors of four, and the sixteen reads
//     of a half-warp use all 32 banks once). Row-wise writes stay conflict-free because XOR
//     with a constant only permutes the chunks of one row.
// Vectors need rows and cols that are multiples of 4 (every row of `in` and of `out` then
// starts on a vector boundary) and aligned pointers. Any other shape or pointer takes a
// coarsened scalar kernel: v3's padded 32 x 32 tile, moved by 32 x 8 threads, 4 elements each.
//
// The copy: stride 1 with float4 and four loads in flight per thread (chapter 1's vector
// add, minus one input); other strides with the scalar loads of v1, four per thread.
//
// From ladder.cuh: CH02_TRANSPOSE_STEP (the f32 and bf16 entry points of the launcher).
//
// Run: build/ch02/bin/ch02_bench --impl=v4_vectorized,v3_padded,reference
//      (`%meas` is the share of this GPU's measured copy bandwidth; the target is >= 90 at 8192x8192)
#include <algorithm>
#include <cstdint>

#include "runtime/errors.cuh"
#include "ladder.cuh"

namespace ch02::solution {
namespace {

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Four consecutive elements, moved as one 16-byte (FP32) or 8-byte (BF16) access.
template <class T>
struct alignas(4 * sizeof(T)) Vec4 {
  T v[4];
};

// --- copy ------------------------------------------------------------------------------

constexpr int kCopyThreads = 256;
constexpr int kCopyUnroll = 4;  // loads in flight per thread

// Block b copies float4 number [b * kCopyThreads * kCopyUnroll, (b + 1) * ...): thread t
// takes t, t + kCopyThreads, ... so each of the kCopyUnroll loads is coalesced.
__global__ void __launch_bounds__(kCopyThreads)
    copy4_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int n4 = n / 4;
  const float4* in4 = reinterpret_cast<const float4*>(in);
  float4* out4 = reinterpret_cast<float4*>(out);
  const int base = blockIdx.x * kCopyThreads * kCopyUnroll + threadIdx.x;
  float4 v[kCopyUnroll];
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    if (base + u * kCopyThreads < n4) v[u] = in4[base + u * kCopyThreads];
  }
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    if (base + u * kCopyThreads < n4) out4[base + u * kCopyThreads] = v[u];
  }
  // The last 0..3 elements that do not fill a float4.
  if (blockIdx.x == gridDim.x - 1 && static_cast<int>(threadIdx.x) < n % 4) {
    const int i = n4 * 4 + threadIdx.x;
    out[i] = in[i];
  }
}

__global__ void __launch_bounds__(kCopyThreads)
    strided_copy_coarse_kernel(const float* __restrict__ in, float* __restrict__ out, int n, int stride) {
  const int base = blockIdx.x * kCopyThreads * kCopyUnroll + threadIdx.x;
  float v[kCopyUnroll];
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    const int i = base + u * kCopyThreads;
    if (i < n) v[u] = in[static_cast<size_t>(i) * stride];
  }
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    const int i = base + u * kCopyThreads;
    if (i < n) out[i] = v[u];
  }
}

// --- transpose, vector path: (kTile, kTile) tile, kThreads threads, 4 x 4 blocks ---------

template <class T, int kTile, int kThreads>
__global__ void __launch_bounds__(kThreads)
    transpose_vec4_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  using V = Vec4<T>;
  constexpr int kChunks = kTile / 4;                // vectors per tile row
  constexpr int kRowsPerPass = kThreads / kChunks;  // tile rows one load pass covers
  static_assert(kTile % 4 == 0 && (kChunks & (kChunks - 1)) == 0, "the swizzle XORs chunk numbers: a power of two");
  static_assert(kThreads % kChunks == 0 && kTile % kRowsPerPass == 0, "load passes must tile the tile");
  static_assert((kTile / 4) * kChunks == kThreads, "one 4 x 4 block per thread on the way out");
  __shared__ V tile[kTile][kChunks];  // (kTile rows, kChunks vectors) of `in`, chunk positions swizzled per row

  // Where chunk j of tile row r is kept.
  auto slot = [](int r, int j) { return j ^ ((r / 4) % kChunks); };

  const int t = threadIdx.x;
  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;  // the tile's origin in `in`

  // 1. Load: thread t takes chunk j = t % kChunks of tile rows t / kChunks + k * kRowsPerPass.
  //    A warp reads two full tile rows (2 x 256 bytes for FP32). All loads are issued
  //    before any result is used.
  {
    constexpr int kPasses = kTile / kRowsPerPass;
    const int j = t % kChunks, r_first = t / kChunks;
    const bool col_ok = c0 + 4 * j < cols;  // cols is a multiple of 4: the whole vector is in
    const T* src = in + static_cast<size_t>(r0 + r_first) * cols + c0 + 4 * j;
    const size_t pass_step = static_cast<size_t>(kRowsPerPass) * cols;
    V v[kPasses];
#pragma unroll
    for (int k = 0; k < kPasses; ++k) {
      if (col_ok && r0 + r_first + k * kRowsPerPass < rows) v[k] = *reinterpret_cast<const V*>(src + k * pass_step);
    }
#pragma unroll
    for (int k = 0; k < kPasses; ++k) {
      const int r = r_first + k * kRowsPerPass;
      if (col_ok && r0 + r < rows) tile[r][slot(r, j)] = v[k];
    }
  }
  __syncthreads();

  // 2. Store: thread t owns the 4 x 4 block at tile rows 4q..4q+3, columns 4jc..4jc+3, with
  //    q = t % (kTile / 4) and jc = t / (kTile / 4). Transposed, it is out rows c0+4jc..+3,
  //    columns r0+4q..+3. A warp writes two full rows of `out`.
  const int q = t % (kTile / 4), jc = t / (kTile / 4);
  if (r0 + 4 * q >= rows || c0 + 4 * jc >= cols) return;  // rows, cols are multiples of 4: all or nothing
  V a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = tile[4 * q + i][slot(4 * q + i, jc)];  // row 4q+i of the block
  T* dst = out + static_cast<size_t>(c0 + 4 * jc) * rows + r0 + 4 * q;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    V b;  // column j of the block = a row of `out`
#pragma unroll
    for (int i = 0; i < 4; ++i) b.v[i] = a[i].v[j];
    *reinterpret_cast<V*>(dst + static_cast<size_t>(j) * rows) = b;
  }
}

// --- transpose, any shape: v3's padded tile, kTile / kRowsPerPass elements per thread ----

template <class T, int kTile, int kRowsPerPass>
__global__ void __launch_bounds__(kTile* kRowsPerPass)
    transpose_coarse_kernel(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
  static_assert(kTile % kRowsPerPass == 0, "the passes must cover the tile");
  static_assert(sizeof(T) <= 4 && 4 % sizeof(T) == 0, "the pad is one 4-byte bank word");
  constexpr int kPad = 4 / sizeof(T);
  __shared__ T tile[kTile][kTile + kPad];  // (kTile, kTile) piece of `in`, padded against bank conflicts

  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int k = 0; k < kTile; k += kRowsPerPass) {
    if (r0 + ty + k < rows && c0 + tx < cols) tile[ty + k][tx] = in[static_cast<size_t>(r0 + ty + k) * cols + c0 + tx];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kTile; k += kRowsPerPass) {
    if (c0 + ty + k < cols && r0 + tx < rows) {
      out[static_cast<size_t>(c0 + ty + k) * rows + r0 + tx] = tile[tx][ty + k];
    }
  }
}

template <class T>
void transpose_v4(const T* in, T* out, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (rows % 4 == 0 && cols % 4 == 0 && aligned(in, sizeof(Vec4<T>)) && aligned(out, sizeof(Vec4<T>))) {
    constexpr int kTile = 64, kThreads = 256;
    const dim3 grid(ceil_div(cols, kTile), ceil_div(rows, kTile));
    transpose_vec4_kernel<T, kTile, kThreads><<<grid, kThreads, 0, stream>>>(in, out, rows, cols);
  } else {
    constexpr int kTile = 32, kRowsPerPass = 8;
    const dim3 grid(ceil_div(cols, kTile), ceil_div(rows, kTile));
    transpose_coarse_kernel<T, kTile, kRowsPerPass>
        <<<grid, dim3(kTile, kRowsPerPass), 0, stream>>>(in, out, rows, cols);
  }
  WB_CHECK_LAUNCH();
}

}  // namespace

void v4_strided_copy(const float* in, float* out, int n, int stride, cudaStream_t stream) {
  if (n == 0) return;
  if (stride == 1 && aligned(in, 16) && aligned(out, 16)) {
    const int blocks = std::max(1, ceil_div(n / 4, kCopyThreads * kCopyUnroll));
    copy4_kernel<<<blocks, kCopyThreads, 0, stream>>>(in, out, n);
  } else {
    strided_copy_coarse_kernel<<<ceil_div(n, kCopyThreads * kCopyUnroll), kCopyThreads, 0, stream>>>(in, out, n,
                                                                                                     stride);
  }
  WB_CHECK_LAUNCH();
}

CH02_TRANSPOSE_STEP(v4, transpose_v4)

}  // namespace ch02::solution
