// Chapter 9's reference for the INT8-weight GEMVs (gemv_w8a16*/bf16). cuBLASLt has no GEMV
// with int8 weights and BF16 activations, so this reference is the way a program without such
// a kernel would run INT8 weights: dequantize them to BF16 once, outside the timed region
// (Variant::prepare), and run the library's BF16 GEMV (cublaslt_gemv<bf16>, M = 1) on the copy.
//
//   W[n][k] = bf16(q[n][k] * scale[n])   (N, K), kept on the device until the next prepare
//
// Its timing is therefore the BF16 GEMV's: the benchmark's "x ref" column for v5_gemv_w8a16
// is what reading 1 byte per weight instead of 2 buys. Its values differ from the exact
// sum by one BF16 rounding per weight, well inside the op's tolerance (spec.cu).
#include <algorithm>
#include <mutex>

#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "reference.cuh"
#include "declare/op.cuh"

namespace ch09::reference {
namespace {

// The BF16 copy of the last prepared (q, scale), and what it was made from.
struct Dequantized {
  std::mutex m;
  wb::DeviceBuffer<bf16> w;  // (N, K)
  const int8_t* q = nullptr;
  const float* scale = nullptr;
  int N = 0, K = 0, device = -1;
};

// Never destroyed: freeing device memory at exit may come after the CUDA runtime has shut down.
Dequantized& copy() {
  static auto* c = new Dequantized();
  return *c;
}

// grid-stride over the N * K weights: element i is (n, k) = (i / K, i % K).
__global__ void dequantize_kernel(const int8_t* q, const float* scale, bf16* w, int N, int K) {
  const size_t total = size_t(N) * K;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    w[i] = __float2bfloat16(float(q[i]) * scale[i / K]);
  }
}

// Fills c.w from (q, scale) on `stream`; the caller holds c.m.
void dequantize_into(Dequantized& c, const int8_t* q, const float* scale, int N, int K, cudaStream_t stream) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const size_t count = size_t(N) * K;
  if (c.w.size() != count || c.device != device) c.w = wb::DeviceBuffer<bf16>(count);  // allocates: not under capture
  constexpr int kThreads = 256;
  const size_t blocks = std::min<size_t>((count + kThreads - 1) / kThreads, 65535);
  dequantize_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(q, scale, c.w.data(), N, K);
  WB_CHECK_LAUNCH();
  c.q = q, c.scale = scale, c.N = N, c.K = K, c.device = device;
}

}  // namespace

void dequantize_w8_prepare(const int8_t* q, const float* scale, int N, int K, cudaStream_t stream) {
  if (N < 1 || K < 1) return;  // the GEMV itself refuses these
  Dequantized& c = copy();
  std::lock_guard<std::mutex> lock(c.m);
  dequantize_into(c, q, scale, N, K, stream);  // always: the values behind the same pointers may have changed
}

void cublaslt_gemv_w8a16(const bf16* x, const int8_t* q, const float* scale, const bf16* b, bf16* y, int N, int K,
                         Epilogue epi, cudaStream_t stream) {
  require_valid(1, N, K, epi, b);
  Dequantized& c = copy();
  std::lock_guard<std::mutex> lock(c.m);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (c.q != q || c.scale != scale || c.N != N || c.K != K || c.device != device) {
    dequantize_into(c, q, scale, N, K, stream);
  }
  cublaslt_gemv<bf16>(x, c.w.data(), b, y, N, K, epi, stream);
}

WB_VARIANTS(ch09_reference_w8a16, wb::Role::Reference) {
  std::vector<wb::Variant> v;
  for (const char* op : {"gemv_w8a16/bf16", "gemv_w8a16_bias/bf16", "gemv_w8a16_bias_gelu/bf16"}) {
    v.push_back(wb::variant(op, "cublaslt_bf16", &cublaslt_gemv_w8a16)
                    .is_library()
                    .with_prepare([](const wb::Args& a, cudaStream_t s) {
                      dequantize_w8_prepare(a.in<int8_t>("q"), a.in<float>("scale"), a.i("N"), a.i("K"), s);
                    })
                    .with_note("W dequantized to BF16 once, outside the timed region; then cublasLtMatmul, M = 1: "
                               "reads BF16 weights, the yardstick for what INT8 buys"));
  }
  return v;
}

}  // namespace ch09::reference
