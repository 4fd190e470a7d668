#include "measure/ceilings.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "measure/ceilings_cache.h"
#include "runtime/buffers.cuh"
#include "runtime/launch.cuh"
#include "measure/timing.cuh"
#include "runtime/launch_helpers.cuh"

namespace wb {
namespace {

// Device-side random fill in [-1, 1), so GEMM ceilings are never measured on zeros.
template <class T>
__global__ void fill_random_kernel(T* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    const float u = static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    if constexpr (std::is_same_v<T, int8_t>) {
      p[i] = static_cast<int8_t>(static_cast<int>(h >> 24) - 128);
    } else {
      p[i] = static_cast<T>(u);
    }
  }
}

template <class T>
void fill_random(DeviceBuffer<T>& b, uint32_t seed) {
  fill_random_kernel<<<1024, 256>>>(b.data(), b.size(), seed);
  WB_CHECK_LAUNCH();
}

// A plain 16-byte-per-thread copy; the ceiling is the faster of this and cudaMemcpy.
__global__ void copy16_kernel(const int4* __restrict__ src, int4* __restrict__ dst, size_t n16) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n16; i += size_t{gridDim.x} * blockDim.x) {
    dst[i] = src[i];
  }
}

}  // namespace

double measure_copy_gbps() {
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const size_t bytes = std::min<size_t>(size_t{1} << 30, free_b / 4) & ~size_t{255};
  DeviceBuffer<char> src(bytes), dst(bytes);
  CUDA_CHECK(cudaMemset(src.data(), 0x3C, bytes));
  CUDA_CHECK(cudaDeviceSynchronize());  // the legacy stream's memset, done before the timed stream starts
  Stream stream;
  auto copy = [&](cudaStream_t s) {
    CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s));
  };
  const int sms = sm_count();
  auto kernel_copy = [&](cudaStream_t s) {
    copy16_kernel<<<sms * 8, 512, 0, s>>>(reinterpret_cast<const int4*>(src.data()),
                                          reinterpret_cast<int4*>(dst.data()), bytes / 16);
    WB_CHECK_LAUNCH();
  };
  TimingOptions opt;
  opt.min_samples = 20;
  const double ms = std::min(time_launcher(copy, stream, "the device-copy ceiling", opt).median,
                             time_launcher(kernel_copy, stream, "the device-copy ceiling", opt).median);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

double measure_gemm_tflops(Peak type, int n) {
  const size_t count = size_t(n) * n;
  Stream stream;
  cublasHandle_t h = cublas_for(stream);
  CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // FP32 stays FP32: no TF32
  std::function<void(cudaStream_t)> run;
  // Buffers for every type, only the one in use is allocated.
  DeviceBuffer<float> af, bf, cf;
  DeviceBuffer<__half> ah, bh;
  DeviceBuffer<__nv_bfloat16> ab, bb;
  DeviceBuffer<int8_t> ai, bi;
  DeviceBuffer<int32_t> ci;
  const float one = 1.0f, zero = 0.0f;
  const int32_t ione = 1, izero = 0;
  switch (type) {
    case Peak::FP32:
      af = DeviceBuffer<float>(count), bf = DeviceBuffer<float>(count), cf = DeviceBuffer<float>(count);
      fill_random(af, 1), fill_random(bf, 2);
      run = [&](cudaStream_t) {
        CUBLAS_CHECK(
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, af.data(), n, bf.data(), n, &zero, cf.data(), n));
      };
      break;
    case Peak::F16Tensor:
    case Peak::BF16Tensor: {
      const bool half = type == Peak::F16Tensor;
      const cudaDataType_t t = half ? CUDA_R_16F : CUDA_R_16BF;
      cf = DeviceBuffer<float>(count);
      if (half) {
        ah = DeviceBuffer<__half>(count), bh = DeviceBuffer<__half>(count);
        fill_random(ah, 3), fill_random(bh, 4);
      } else {
        ab = DeviceBuffer<__nv_bfloat16>(count), bb = DeviceBuffer<__nv_bfloat16>(count);
        fill_random(ab, 5), fill_random(bb, 6);
      }
      const void* a = half ? static_cast<const void*>(ah.data()) : ab.data();
      const void* b = half ? static_cast<const void*>(bh.data()) : bb.data();
      run = [&, a, b, t](cudaStream_t) {
        CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, t, n, b, t, n, &zero, cf.data(),
                                  CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      };
      break;
    }
    case Peak::I8Tensor:
      ai = DeviceBuffer<int8_t>(count), bi = DeviceBuffer<int8_t>(count), ci = DeviceBuffer<int32_t>(count);
      fill_random(ai, 7), fill_random(bi, 8);
      run = [&](cudaStream_t) {
        // cuBLAS's INT8 tensor path wants A transposed (the "TN" layout).
        CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &ione, ai.data(), CUDA_R_8I, n, bi.data(),
                                  CUDA_R_8I, n, &izero, ci.data(), CUDA_R_32I, n, CUBLAS_COMPUTE_32I,
                                  CUBLAS_GEMM_DEFAULT));
      };
      break;
  }
  try {
    TimingOptions opt;
    opt.min_samples = 10;
    opt.max_samples = 30;
    const Stats st = time_launcher(run, stream, "a cuBLAS GEMM ceiling", opt);
    return 2.0 * n * double(n) * n / (st.median * 1e-3) / 1e12;
  } catch (const CudaError& e) {
    if (e.sticky) throw;
    std::fprintf(stderr, "note: no %s GEMM ceiling on this GPU: %s\n", peak_name(type), e.what());
    return 0.0;
  }
}

MeasuredCeilings measured_ceilings(const DeviceInfo& dev, bool remeasure) {
  MeasuredCeilings m;
  m.cache_path = (std::filesystem::path(ceilings_cache_dir()) / ("ceilings-" + dev.uuid + ".json")).string();
  if (!remeasure) {
    if (const auto cached = read_ceilings_cache(m.cache_path)) {
      m.values = *cached;
      m.from_cache = true;
      return m;
    }
  }
  std::fprintf(stderr, "Measuring this GPU's ceilings once (copy bandwidth, cuBLAS GEMMs); cached in %s\n",
               m.cache_path.c_str());
  m.values.dram_gbps = measure_copy_gbps();
  m.values.fp32_tflops = measure_gemm_tflops(Peak::FP32, 4096);
  if (dev.has_wmma_f16()) m.values.f16_tflops = measure_gemm_tflops(Peak::F16Tensor, 8192);
  if (dev.has_wmma_bf16()) m.values.bf16_tflops = measure_gemm_tflops(Peak::BF16Tensor, 8192);
  if (dev.has_wmma_i8()) m.values.i8_tops = measure_gemm_tflops(Peak::I8Tensor, 8192);

  if (!write_ceilings_cache(m.cache_path, dev.name, dev.uuid, version_text(dev.driver_version), m.values)) {
    std::fprintf(stderr, "note: could not write the ceilings cache %s; they will be measured again next time\n",
                 m.cache_path.c_str());
  }
  return m;
}

}  // namespace wb
