// v11 (bonus, Hopper sm_90a only) — INT8 GEMM on wgmma (s8 x s8 -> s32), for gemm/i8_i32.
//
// What changes over v8 (INT8 on mma.sync): Hopper's asynchronous warpgroup MMA, fed by TMA, in
// the 8-bit pipeline of v9 (hopper/wgmma_8bit_kernel.cuh) with 128 x 256 tiles and one INT32
// accumulator per output (integer sums are exact: nothing to promote). Why it is faster:
// mma.sync reaches about two thirds of the INT8 tensor rate on Hopper (docs/precision.md,
// "Tensor-core rates"); wgmma is the instruction that reaches the rest.
//
// What it needs: s8 wgmma reads both operands K-major, but the op's B is K x N row-major
// (N-major). So B is transposed once into Bt (N x K) by int8_arrange_b, the variant's prepare
// step: untimed, after each change of the inputs, as the cuBLASLt IMMA reference arranges its
// copy of B (static weights are arranged once in practice). A call whose B was not arranged
// arranges it first, inside the call. TMA needs the rows of A and Bt (K bytes) to be
// multiples of 16 bytes: other K go to v8 (solutions/ch05_wmma/v11_wgmma_int8.cu decides).
//
// Run: build/all/bin/ch05_bench --op=gemm/i8_i32 --impl=v11_wgmma_int8,v8_mma_sync_int8,reference
#include "hopper.cuh"
#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "wgmma_8bit_kernel.cuh"

namespace ch05::solution::hopper {
namespace {

constexpr int kTile = 32;

// Bt (N x K, row-major) = B^T for B (K x N, row-major): 32 x 32 tiles through shared memory,
// so that both the reads of B and the writes of Bt are coalesced.
__global__ void transpose_kernel(int N, int K, const int8_t* __restrict__ B, int8_t* __restrict__ Bt) {
  __shared__ int8_t tile[kTile][kTile + 1];
  const int j0 = blockIdx.x * kTile, p0 = blockIdx.y * kTile;
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int p = p0 + r, j = j0 + threadIdx.x;
    if (p < K && j < N) tile[r][threadIdx.x] = B[size_t(p) * N + j];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int j = j0 + r, p = p0 + threadIdx.x;
    if (j < N && p < K) Bt[size_t(j) * K + p] = tile[threadIdx.x][r];
  }
}

// The arranged copy of the last B (one device: the chapter runs one GEMM at a time).
struct Arranged {
  const int8_t* source = nullptr;
  int n = -1, k = -1;
  wb::DeviceBuffer<int8_t> bt;
};
Arranged& arranged() {
  static auto* a = new Arranged();  // never destroyed: no cudaFree after the runtime is gone
  return *a;
}

}  // namespace

bool int8_supports(int, int, int K, const void* A) {
  return K > 0 && K % 16 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0;
}

void int8_arrange_b(int N, int K, const int8_t* B, cudaStream_t stream) {
  if (N <= 0 || K <= 0 || K % 16 != 0) return;
  Arranged& a = arranged();
  if (a.bt.size() < size_t(N) * K) a.bt = wb::DeviceBuffer<int8_t>(size_t(N) * K);
  const dim3 grid((N + kTile - 1) / kTile, (K + kTile - 1) / kTile), block(kTile, 8);
  transpose_kernel<<<grid, block, 0, stream>>>(N, K, B, a.bt.data());
  WB_CHECK_LAUNCH();
  a.source = B, a.n = N, a.k = K;
}

const int8_t* int8_arranged_b(int N, int K, const int8_t* B, cudaStream_t stream) {
  Arranged& a = arranged();
  if (a.source != B || a.n != N || a.k != K) int8_arrange_b(N, K, B, stream);
  return a.bt.data();
}

void int8_gemm(int M, int N, int K, const int8_t* A, const int8_t* B, const int32_t* C, int32_t* D,
               cudaStream_t stream) {
  const int8_t* bt = int8_arranged_b(N, K, B, stream);
  static k8::MapCache cache;
  const k8::Params p{M, N, K, nullptr, nullptr, 0, nullptr, C, D};
  k8::launch<k8::Epi::Int8>(cache, A, bt, p, stream, "v11_wgmma_int8");
}

}  // namespace ch05::solution::hopper
