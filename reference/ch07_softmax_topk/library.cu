// Chapter 7's reference ("variant 0"): the honest unfused library pipeline.
//
//   softmax          cudnnSoftmaxForward, CUDNN_SOFTMAX_ACCURATE (the max subtracted), one
//                    instance per row (N = B, C = V, H = W = 1)
//   top-k            CUB's segmented radix sort of each row, descending, with the indices
//                    as payload (stable: equal logits keep the lower index first), then
//                    the first k of each row gathered
//   softmax + top-k  both, the probabilities gathered at the sorted indices
//
// The sort is by LOGIT, not by probability: the order is the same, except where two
// different logits round to one FP32 probability, which the chapter orders by logit (an
// all-but-underflowed row has thousands of exact zeros). CUB 3.0 has no DeviceTopK, so the
// whole row is sorted: B*V keys and indices are read and written several times over, which
// is what fusing saves. cuDNN gives NaN for a row of -inf only (0/0), where the chapter
// defines 0: a small kernel looks at one probability per row and zeroes the rare such row.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <algorithm>
#include <cstdint>

#include "ch07.cuh"
#include "runtime/cudnn_check.cuh"
#include "runtime/errors.cuh"
#include "declare/op.cuh"

namespace ch07::reference {
namespace {

// grid (B): a row whose first probability is NaN came from logits all -inf: zero it.
__global__ void zero_masked_rows(float* probs, int V) {
  float* row = probs + size_t(blockIdx.x) * V;
  if (!isnan(row[0])) return;
  for (int v = threadIdx.x; v < V; v += blockDim.x) row[v] = 0.0f;
}

// grid (ceil(V / 256), B): the row's indices 0..V-1 (the sort's payload); offsets[b] = b*V.
__global__ void iota_rows(int32_t* index, int* offsets, int B, int V) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (v < V) index[size_t(b) * V + v] = v;
  if (v == 0 && b == 0) {
    for (int i = 0; i <= B; ++i) offsets[i] = i * V;
  }
}

// grid (B), k threads: the first k of each sorted row.
__global__ void gather_topk(const int32_t* sorted_index, const float* source, float* values, int32_t* indices, int V,
                            int k) {
  const int b = blockIdx.x, j = threadIdx.x;
  if (j >= k) return;
  const int32_t i = sorted_index[size_t(b) * V + j];
  indices[size_t(b) * k + j] = i;
  values[size_t(b) * k + j] = source[size_t(b) * V + i];
}

class TensorDesc {
 public:
  TensorDesc(int B, int V) {
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, V, 1, 1));
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  operator cudnnTensorDescriptor_t() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

void cudnn_softmax_rows(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  cudnnHandle_t h = wb::cudnn_handle();
  CUDNN_CHECK(cudnnSetStream(h, stream));
  const TensorDesc desc(B, V);
  const float one = 1.0f, zero = 0.0f;
  CUDNN_CHECK(
      cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, desc, x, &zero, desc, probs));
  zero_masked_rows<<<B, 256, 0, stream>>>(probs, V);
  CUDA_CHECK(cudaGetLastError());
}

// Rows per pass: the libraries take int element counts and offsets, and the sort needs four
// copies of what it sorts as scratch, so a batch of more than 2^26 logits (past 2^31 in all,
// 8,193 rows of 262,144) is worked through in passes of at most 2^26 logits (at least one
// row), and at most 65,535 rows (the sort's row-index grid is gridDim.y). Every benchmark
// shape fits in one pass.
int rows_per_pass(int B, int V) {
  const int64_t rows = std::max<int64_t>(1, (int64_t{1} << 26) / V);
  return static_cast<int>(std::min<int64_t>({B, rows, 65535}));
}

size_t sort_temp_bytes(int B, int V) {
  size_t bytes = 0;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
      nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), B * V, B, static_cast<const int*>(nullptr),
      static_cast<const int*>(nullptr)));
  return bytes;
}

// Scratch for one pass of `B` rows (rows_per_pass of the whole batch).
struct Scratch {
  float *keys_out, *probs;
  int32_t *index_in, *index_out;
  int* offsets;
  void* temp;
  size_t temp_bytes;

  static size_t round(size_t n) { return (n + 255) / 256 * 256; }
  static size_t bytes(int B, int V) {
    const size_t row = round(size_t(B) * V * 4);
    return 4 * row + round(size_t(B + 1) * 4) + sort_temp_bytes(B, V);
  }
  Scratch(void* base, int B, int V) {
    char* p = static_cast<char*>(base);
    const size_t row = round(size_t(B) * V * 4);
    keys_out = reinterpret_cast<float*>(p), p += row;
    probs = reinterpret_cast<float*>(p), p += row;
    index_in = reinterpret_cast<int32_t*>(p), p += row;
    index_out = reinterpret_cast<int32_t*>(p), p += row;
    offsets = reinterpret_cast<int*>(p), p += round(size_t(B + 1) * 4);
    temp = p;
    temp_bytes = sort_temp_bytes(B, V);
  }
};

void sort_rows(const float* x, const Scratch& s, int B, int V, cudaStream_t stream) {
  iota_rows<<<dim3((V + 255) / 256, B), 256, 0, stream>>>(s.index_in, s.offsets, B, V);
  CUDA_CHECK(cudaGetLastError());
  size_t temp_bytes = s.temp_bytes;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
      s.temp, temp_bytes, x, s.keys_out, s.index_in, s.index_out, B * V, B, s.offsets, s.offsets + 1, 0, 32, stream));
}

void topk_pipeline(const float* x, float* probs_out, float* values, int32_t* indices, int B, int V, int k,
                   bool probabilities, void* workspace, cudaStream_t stream) {
  require_valid(B, V, k);
  const int pass = rows_per_pass(B, V);
  const Scratch s(workspace, pass, V);
  for (int b0 = 0; b0 < B; b0 += pass) {
    const int rows = std::min(pass, B - b0);
    const size_t at = size_t(b0) * V;
    float* probs = probs_out ? probs_out + at : s.probs;
    if (probabilities) cudnn_softmax_rows(x + at, probs, rows, V, stream);
    sort_rows(x + at, s, rows, V, stream);
    gather_topk<<<rows, kMaxK, 0, stream>>>(s.index_out, probabilities ? probs : x + at, values + size_t(b0) * k,
                                            indices + size_t(b0) * k, V, k);
    CUDA_CHECK(cudaGetLastError());
  }
}

void cudnn_softmax(const float* x, float* probs, int B, int V, cudaStream_t stream) {
  require_valid(B, V, 0, false);
  const int pass = rows_per_pass(B, V);
  for (int b0 = 0; b0 < B; b0 += pass) {
    cudnn_softmax_rows(x + size_t(b0) * V, probs + size_t(b0) * V, std::min(pass, B - b0), V, stream);
  }
}

void cub_topk(const float* x, float* values, int32_t* indices, int B, int V, int k, void* ws, cudaStream_t stream) {
  topk_pipeline(x, nullptr, values, indices, B, V, k, false, ws, stream);
}

void cudnn_cub_softmax_topk(const float* x, float* values, int32_t* indices, int B, int V, int k, void* ws,
                            cudaStream_t stream) {
  topk_pipeline(x, nullptr, values, indices, B, V, k, true, ws, stream);
}

void cudnn_cub_softmax_topk_probs(const float* x, float* probs, float* values, int32_t* indices, int B, int V, int k,
                                  void* ws, cudaStream_t stream) {
  topk_pipeline(x, probs, values, indices, B, V, k, true, ws, stream);
}

}  // namespace

WB_VARIANTS(ch07_reference, wb::Role::Reference) {
  const auto scratch = [](const wb::Shape& s) {
    const int B = int(s["B"]), V = int(s["V"]);
    return Scratch::bytes(rows_per_pass(B, V), V);
  };
  const std::string sort_note = "CUB segmented radix sort of every row (CUB has no DeviceTopK here), first k taken";
  return {
      wb::variant("softmax/f32", "cudnn_softmax", &cudnn_softmax)
          .is_library()
          .with_note("cudnnSoftmaxForward, accurate"),
      wb::variant("topk/f32", "cub_sort_topk", &cub_topk).is_library().with_workspace(scratch).with_note(sort_note),
      wb::variant("softmax_topk/f32", "cudnn_cub_topk", &cudnn_cub_softmax_topk)
          .is_library()
          .with_workspace(scratch)
          .with_note("cudnnSoftmaxForward, then " + sort_note),
      wb::variant("softmax_topk_probs/f32", "cudnn_cub_topk", &cudnn_cub_softmax_topk_probs)
          .is_library()
          .with_workspace(scratch)
          .with_note("cudnnSoftmaxForward, then " + sort_note),
  };
}

}  // namespace ch07::reference
