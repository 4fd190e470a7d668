#include "runtime/buffers.cuh"

namespace wb {
namespace {

template <class W>
__global__ void fill_kernel(W* p, size_t n, W value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    p[i] = value;
  }
}

template <class W>
void fill(void* ptr, size_t count, W value, cudaStream_t stream) {
  if (count == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((count + 255) / 256, 4096));
  fill_kernel<<<blocks, 256, 0, stream>>>(static_cast<W*>(ptr), count, value);
  WB_CHECK_LAUNCH();
}

// splitmix64's finaliser of (seed + index): a different, well-mixed word per element.
__global__ void fill_uniform_kernel(float* p, size_t n, uint64_t seed, float lo, float span) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * 0x1.0p-24f;  // [0, 1) in steps of 2^-24
    p[i] = lo + span * u;
  }
}

}  // namespace

void fill_uniform(float* ptr, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 8192));
  fill_uniform_kernel<<<blocks, 256, 0, stream>>>(ptr, n, seed, lo, hi - lo);
  WB_CHECK_LAUNCH();
}

void fill_pattern(void* ptr, size_t bytes, uint32_t pattern, int pattern_size, cudaStream_t stream) {
  switch (pattern_size) {
    case 1:
      CUDA_CHECK(cudaMemsetAsync(ptr, static_cast<int>(pattern & 0xFF), bytes, stream));
      break;
    case 2:
      fill(ptr, bytes / 2, static_cast<uint16_t>(pattern), stream);
      break;
    case 4:
      fill(ptr, bytes / 4, pattern, stream);
      break;
    default:
      throw std::invalid_argument("fill_pattern: pattern size must be 1, 2 or 4");
  }
}

cublasHandle_t cublas_for(cudaStream_t stream) {
  thread_local CublasHandle handle;
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  return handle;
}

}  // namespace wb
