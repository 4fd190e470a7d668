// Chapter 9's library reference: one cublasLtMatmul per linear layer, the bias and GELU in
// the library's own epilogue.
//
// The layout trick. cuBLASLt is column-major. Our y (M, N) row-major is, read column-major,
// yᵀ (N, M); x (M, K) row-major is xᵀ (K, M) column-major; W (N, K) row-major is Wᵀ (K, N)
// column-major. So  yᵀ = W · xᵀ  is the matmul  D (N x M) = op(A) · B  with A = the W buffer
// (K x N, ld K) transposed, B = the x buffer (K x M, ld K), D = the y buffer (N x M, ld N).
// The bias has one entry per row of D, which is one per output feature n, as cuBLASLt's
// BIAS epilogues want (a vector of length rows(D)).
//
// FP32 compute (CUBLAS_COMPUTE_32F: no TF32), FP32 scale; BF16 or FP32 data. The bias is in
// D's type (cuBLASLt's default for these types).
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>

#include "runtime/cublaslt_check.cuh"
#include "runtime/errors.cuh"
#include "runtime/launch.cuh"
#include "reference.cuh"
#include "declare/op.cuh"

namespace ch09::reference {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The largest power of two (up to 256) that divides the address: what cuBLASLt's heuristic
// must be told, since it assumes 256-byte aligned pointers otherwise.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

using Key = std::tuple<int, int, int, int, int, uint32_t, uint32_t, uint32_t>;  // dtype, M, N, K, epi, alignments

class Library {
 public:
  static Library& get() {
    static Library lib;
    return lib;
  }
  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_; }

  const Plan& plan(cudaDataType_t type, int M, int N, int K, Epilogue epi, const void* x, const void* w, void* y) {
    const Key key{int(type), M, N, K, int(epi), alignment_of(x), alignment_of(w), alignment_of(y)};
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;

    auto p = std::make_unique<Plan>();
    CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    const cublasLtEpilogue_t e = epi == Epilogue::None   ? CUBLASLT_EPILOGUE_DEFAULT
                                 : epi == Epilogue::Bias ? CUBLASLT_EPILOGUE_BIAS
                                                         : CUBLASLT_EPILOGUE_GELU_BIAS;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->a, type, K, N, K));  // the W buffer, K x N column-major
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->b, type, K, M, K));  // the x buffer, K x M
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->d, type, N, M, N));  // the y buffer, N x M

    cublasLtMatmulPreference_t pref = nullptr;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = kWorkspaceBytes;
    const uint32_t ax = std::get<5>(key), aw = std::get<6>(key), ay = std::get<7>(key);
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw, sizeof(aw));
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax, sizeof(ax));
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ay, sizeof(ay));
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ay, sizeof(ay));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulAlgoGetHeuristic(handle_, p->desc, p->a, p->b, p->d, p->d, pref, 1, &result, &found);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      throw wb::NoEngine(std::string("cuBLASLt has no algorithm for ") + (type == CUDA_R_32F ? "FP32" : "BF16") +
                         " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                         " with the " + epilogue_name(epi) + " epilogue (" + wb::cublas_status_name(st) + ")");
    }
    p->algo = result.algo;
    return *plans_.emplace(key, std::move(p)).first->second;
  }

 private:
  Library() {
    CUBLASLT_CHECK(cublasLtCreate(&handle_));
    CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
  }
  ~Library() {
    // Left to the process's end: the driver may already be shutting down here.
  }
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

template <class T>
void linear_impl(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream) {
  require_valid(M, N, K, epi, b);
  const cudaDataType_t type = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
  Library& lib = Library::get();
  const Plan& p = lib.plan(type, M, N, K, epi, x, w, y);
  if (epi != Epilogue::None) {
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b)));
  }
  const float one = 1.0f, zero = 0.0f;
  CUBLASLT_CHECK(cublasLtMatmul(lib.handle(), p.desc, &one, w, p.a, x, p.b, &zero, y, p.d, y, p.d, &p.algo,
                                lib.workspace(), kWorkspaceBytes, stream));
}

}  // namespace

template <class T>
void cublaslt_linear(const T* x, const T* w, const T* b, T* y, int M, int N, int K, Epilogue epi, cudaStream_t stream) {
  linear_impl(x, w, b, y, M, N, K, epi, stream);
}
template <class T>
void cublaslt_gemv(const T* x, const T* w, const T* b, T* y, int N, int K, Epilogue epi, cudaStream_t stream) {
  linear_impl(x, w, b, y, 1, N, K, epi, stream);
}
template void cublaslt_linear<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int, int, Epilogue,
                                    cudaStream_t);
template void cublaslt_linear<float>(const float*, const float*, const float*, float*, int, int, int, Epilogue,
                                     cudaStream_t);
template void cublaslt_gemv<bf16>(const bf16*, const bf16*, const bf16*, bf16*, int, int, Epilogue, cudaStream_t);
template void cublaslt_gemv<float>(const float*, const float*, const float*, float*, int, int, Epilogue, cudaStream_t);

WB_VARIANTS(ch09_reference, wb::Role::Reference) {
  const std::string note = "cublasLtMatmul, FP32 compute, bias/GELU in cuBLASLt's epilogue";
  std::vector<wb::Variant> v;
  for (const char* op : {"linear_bias/bf16", "linear_bias_gelu/bf16"})
    v.push_back(wb::variant(op, "cublaslt", &cublaslt_linear<bf16>).is_library().with_note(note));
  for (const char* op : {"linear_bias/f32", "linear_bias_gelu/f32"})
    v.push_back(wb::variant(op, "cublaslt", &cublaslt_linear<float>).is_library().with_note(note));
  for (const char* op : {"gemv/bf16", "gemv_bias/bf16", "gemv_bias_gelu/bf16"})
    v.push_back(wb::variant(op, "cublaslt", &cublaslt_gemv<bf16>).is_library().with_note(note + ", M = 1"));
  for (const char* op : {"gemv/f32", "gemv_bias/f32", "gemv_bias_gelu/f32"})
    v.push_back(wb::variant(op, "cublaslt", &cublaslt_gemv<float>).is_library().with_note(note + ", M = 1"));
  return v;
}

}  // namespace ch09::reference
