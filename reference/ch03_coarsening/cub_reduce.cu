// Chapter 3 reference ("variant 0"): CUB's device-wide reductions.
//
//   sum_f32    cub::DeviceReduce::Sum
//   max_f32    cub::DeviceReduce::Reduce with cuda::maximum and -infinity as the initial
//              value (DeviceReduce::Max would start from the lowest finite float, and the
//              book's convention for an empty input is -infinity)
//   sum_bf16   cub::DeviceReduce::Reduce over the BF16 pointer with an FP32 "add as float"
//              operator and a float initial value: FP32 accumulate, and CUB still sees a
//              plain pointer, so it may use vector loads
//   row_sum    cub::DeviceSegmentedReduce::Sum; the row offsets r * cols are computed on
//              the fly by a transform of a counting iterator, so nothing is allocated
//
// CUB's temporary storage is the workspace: its size is asked for once (a null pointer
// makes CUB only compute the size) and the harness passes that much to every call.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>

#include "ch03.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch03 {
namespace {

// a + b in FP32, whatever the operands' types (float accumulator, BF16 element).
struct AddAsFloat {
  template <class A, class B>
  __host__ __device__ float operator()(A a, B b) const {
    return static_cast<float>(a) + static_cast<float>(b);
  }
};

// The first element of row r, in 64 bits: rows * cols passes 2^31 in the large case, and CUB
// takes its offset type from this iterator's value type.
struct RowStart {
  int cols;
  __host__ __device__ long long operator()(int r) const { return static_cast<long long>(r) * cols; }
};

auto row_offsets(int cols) {
  return thrust::make_transform_iterator(thrust::make_counting_iterator(0), RowStart{cols});
}

// Each helper runs CUB once: with ws == nullptr it only stores the bytes it needs in `bytes`.
cudaError_t sum_f32_cub(void* ws, size_t& bytes, const float* x, int n, float* out, cudaStream_t s) {
  return cub::DeviceReduce::Sum(ws, bytes, x, out, n, s);
}
cudaError_t max_f32_cub(void* ws, size_t& bytes, const float* x, int n, float* out, cudaStream_t s) {
  return cub::DeviceReduce::Reduce(ws, bytes, x, out, n, cuda::maximum<>{}, -INFINITY, s);
}
cudaError_t sum_bf16_cub(void* ws, size_t& bytes, const __nv_bfloat16* x, int n, float* out, cudaStream_t s) {
  return cub::DeviceReduce::Reduce(ws, bytes, x, out, n, AddAsFloat{}, 0.0f, s);
}
cudaError_t row_sum_cub(void* ws, size_t& bytes, const float* x, int rows, int cols, float* out, cudaStream_t s) {
  const auto begin = row_offsets(cols);
  return cub::DeviceSegmentedReduce::Sum(ws, bytes, x, out, rows, begin, begin + 1, s);
}

size_t workspace_bytes(int n) {
  size_t a = 0, b = 0, c = 0;
  CUDA_CHECK(sum_f32_cub(nullptr, a, nullptr, n, nullptr, nullptr));
  CUDA_CHECK(max_f32_cub(nullptr, b, nullptr, n, nullptr, nullptr));
  CUDA_CHECK(sum_bf16_cub(nullptr, c, nullptr, n, nullptr, nullptr));
  return std::max({a, b, c, size_t{16}});  // never 0: CUB reads a null pointer as "tell me the size"
}

size_t row_workspace_bytes(int rows, int cols) {
  size_t bytes = 0;
  CUDA_CHECK(row_sum_cub(nullptr, bytes, nullptr, rows, cols, nullptr, nullptr));
  return std::max(bytes, size_t{16});
}

// A real call must not pass a null workspace: CUB would read it as "tell me the size" and
// return without reducing anything.
void* require(void* ws, size_t bytes, const char* who) {
  if (ws == nullptr || bytes == 0) throw std::length_error(std::string(who) + ": CUB needs a workspace");
  return ws;
}

void sum_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t s) {
  CUDA_CHECK(sum_f32_cub(require(ws, ws_bytes, "cub sum_f32"), ws_bytes, x, n, out, s));
}
void max_f32(const float* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t s) {
  CUDA_CHECK(max_f32_cub(require(ws, ws_bytes, "cub max_f32"), ws_bytes, x, n, out, s));
}
void sum_bf16(const __nv_bfloat16* x, int n, float* out, void* ws, size_t ws_bytes, cudaStream_t s) {
  CUDA_CHECK(sum_bf16_cub(require(ws, ws_bytes, "cub sum_bf16"), ws_bytes, x, n, out, s));
}
void row_sum(const float* x, int rows, int cols, float* out, void* ws, size_t ws_bytes, cudaStream_t s) {
  if (rows == 0) return;
  CUDA_CHECK(row_sum_cub(require(ws, ws_bytes, "cub row_sum"), ws_bytes, x, rows, cols, out, s));
}

}  // namespace

WB_VARIANTS(ch03_reference, wb::Role::Reference) {
  const auto ws = [](const wb::Shape& s) { return workspace_bytes(static_cast<int>(s["n"])); };
  return {
      wb::variant("sum/f32", "cub", &sum_f32).is_library().with_workspace(ws),
      wb::variant("max/f32", "cub", &max_f32).is_library().with_workspace(ws),
      wb::variant("sum/bf16", "cub", &sum_bf16).is_library().with_workspace(ws),
      wb::variant("row_sum/f32", "cub", &row_sum).is_library().with_workspace([](const wb::Shape& s) {
        return row_workspace_bytes(static_cast<int>(s["rows"]), static_cast<int>(s["cols"]));
      }),
  };
}

}  // namespace ch03
