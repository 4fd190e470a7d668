#include "cuda/buffers.cuh"

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

}  // namespace

void fill_pattern(void* ptr, size_t bytes, uint32_t pattern, int pattern_size, cudaStream_t stream) {
  switch (pattern_size) {
    case 1: CUDA_CHECK(cudaMemsetAsync(ptr, static_cast<int>(pattern & 0xFF), bytes, stream)); break;
    case 2: fill(ptr, bytes / 2, static_cast<uint16_t>(pattern), stream); break;
    case 4: fill(ptr, bytes / 4, pattern, stream); break;
    default: throw std::invalid_argument("fill_pattern: pattern size must be 1, 2 or 4");
  }
}

cublasHandle_t cublas_for(cudaStream_t stream) {
  thread_local CublasHandle handle;
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  return handle;
}

}  // namespace wb
