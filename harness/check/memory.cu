#include "check/memory.cuh"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "runtime/buffers.cuh"
#include "runtime/errors.cuh"
#include "declare/spec.h"

namespace wb {

namespace {

// The driver's virtual-memory calls, looked up through the runtime at first use: the
// programs do not link libcuda, so they start (and report "no GPU") on machines without it.
struct Driver {
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  bool ok = false;

  static const Driver& get() {
    static const Driver d = [] {
      Driver x;
      auto look = [&](const char* name, auto** fn) {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult status;
        if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &status) != cudaSuccess ||
            status != cudaDriverEntryPointSuccess) {
          p = nullptr;
        }
        *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
        return p != nullptr;
      };
      x.ok = look("cuGetErrorName", &x.get_error_name) && look("cuDeviceGet", &x.device_get) &&
             look("cuDeviceGetAttribute", &x.device_get_attribute) &&
             look("cuMemGetAllocationGranularity", &x.granularity) && look("cuMemAddressReserve", &x.reserve) &&
             look("cuMemAddressFree", &x.address_free) && look("cuMemCreate", &x.create) &&
             look("cuMemRelease", &x.release) && look("cuMemMap", &x.map) && look("cuMemUnmap", &x.unmap) &&
             look("cuMemSetAccess", &x.set_access);
      cudaGetLastError();
      return x;
    }();
    return d;
  }
};

bool cu_ok(CUresult r) { return r == CUDA_SUCCESS; }

#define CU_CHECK(call)                                                                                                 \
  do {                                                                                                                 \
    const CUresult wb_cu_ = (call);                                                                                    \
    if (wb_cu_ != CUDA_SUCCESS) {                                                                                      \
      const char* wb_name_ = nullptr;                                                                                  \
      Driver::get().get_error_name(wb_cu_, &wb_name_);                                                                 \
      throw ::wb::CudaError(std::string(#call) + " failed: " + (wb_name_ ? wb_name_ : "?") + " at " + __FILE__ + ":" + \
                                std::to_string(__LINE__),                                                              \
                            false);                                                                                    \
    }                                                                                                                  \
  } while (0)

CUmemAllocationProp device_prop() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  return prop;
}

bool vmm_supported() {
  static const bool ok = [] {
    const Driver& drv = Driver::get();
    if (!drv.ok) return false;
    int dev = 0, supported = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    CUdevice d;
    if (!cu_ok(drv.device_get(&d, dev))) return false;
    if (!cu_ok(drv.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d))) {
      return false;
    }
    return supported != 0;
  }();
  return ok;
}

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

template <class T>
__global__ void fill_kernel(T* p, size_t n, T v) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) p[i] = v;
}

// Elements of p[0, n) that differ from v, added to *count. Each warp sums its lanes with
// shuffles first, so a fully written output costs one shared atomic per warp (not per thread)
// and one global atomic per block.
template <class T>
__global__ void count_changed_kernel(const T* p, size_t n, T v, unsigned long long* count) {
  __shared__ unsigned long long block;
  if (threadIdx.x == 0) block = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    mine += p[i] != v;
  }
  for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_down_sync(0xffffffffu, mine, offset);
  if ((threadIdx.x % 32) == 0 && mine) atomicAdd(&block, mine);
  __syncthreads();
  if (threadIdx.x == 0 && block) atomicAdd(count, block);
}

template <class T>
void launch_count(const void* ptr, size_t n, uint64_t pattern, unsigned long long* count, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>((n + 255) / 256, 4096)));
  count_changed_kernel<<<blocks, 256, 0, stream>>>(static_cast<const T*>(ptr), n, static_cast<T>(pattern), count);
  WB_CHECK_LAUNCH();
}

}  // namespace

int64_t count_unpoisoned(const void* ptr, size_t bytes, DType t, unsigned long long* counter, cudaStream_t stream) {
  const size_t size = static_cast<size_t>(dtype_size(t)), n = bytes / size;
  if (n == 0) return 0;
  CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), stream));
  const uint64_t b = poison_bits(t);
  switch (size) {
    case 1:
      launch_count<uint8_t>(ptr, n, b, counter, stream);
      break;
    case 2:
      launch_count<uint16_t>(ptr, n, b, counter, stream);
      break;
    case 4:
      launch_count<uint32_t>(ptr, n, b, counter, stream);
      break;
    default:
      launch_count<unsigned long long>(ptr, n, b, counter, stream);
      break;
  }
  unsigned long long host = 0;
  CUDA_CHECK(cudaMemcpyAsync(&host, counter, sizeof host, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return static_cast<int64_t>(host);
}

void fill_poison(void* ptr, size_t bytes, DType t, cudaStream_t stream) {
  if (bytes == 0) return;
  const uint64_t b = poison_bits(t);
  switch (dtype_size(t)) {
    case 1:
      CUDA_CHECK(cudaMemsetAsync(ptr, static_cast<int>(b & 0xFF), bytes, stream));
      return;
    case 2:
      fill_pattern(ptr, bytes, static_cast<uint32_t>(b), 2, stream);
      return;
    case 4:
      fill_pattern(ptr, bytes, static_cast<uint32_t>(b), 4, stream);
      return;
    case 8: {
      const size_t n = bytes / 8;
      const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096));
      fill_kernel<<<blocks, 256, 0, stream>>>(static_cast<unsigned long long*>(ptr), n,
                                              static_cast<unsigned long long>(b));
      WB_CHECK_LAUNCH();
      return;
    }
  }
}

// --- FencedBuffer ------------------------------------------------------------------------------

FencedBuffer::FencedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  if (!vmm_supported()) {
    CUDA_CHECK(cudaMalloc(&plain_, bytes + 4096));
    ptr_ = plain_;
    return;
  }
  const Driver& drv = Driver::get();
  const CUmemAllocationProp prop = device_prop();
  CU_CHECK(drv.granularity(&granule_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  body_ = round_up(bytes, granule_);
  reserve_ = body_ + granule_;
  CU_CHECK(drv.reserve(&base_, reserve_, granule_, 0, 0));
  CU_CHECK(drv.create(&body_handle_, body_, &prop, 0));
  CU_CHECK(drv.create(&tail_handle_, granule_, &prop, 0));
  CU_CHECK(drv.map(base_, body_, 0, body_handle_, 0));
  CU_CHECK(drv.map(base_ + body_, granule_, 0, tail_handle_, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CHECK(drv.set_access(base_, reserve_, &access, 1));
  // The data ends at the end of the body, its start rounded down to 16 bytes.
  const size_t start = (body_ - bytes) / 16 * 16;
  ptr_ = reinterpret_cast<void*>(base_ + start);
  vmm_ = true;
}

FencedBuffer::~FencedBuffer() {
  if (plain_) cudaFree(plain_);
  if (!vmm_) return;
  const Driver& drv = Driver::get();
  cudaDeviceSynchronize();
  if (!fenced_) drv.unmap(base_ + body_, granule_);
  drv.unmap(base_, body_);
  drv.release(body_handle_);
  drv.release(tail_handle_);
  drv.address_free(base_, reserve_);
}

void FencedBuffer::set_fence(bool on) {
  if (!vmm_ || on == fenced_) return;
  const Driver& drv = Driver::get();
  CUDA_CHECK(cudaDeviceSynchronize());
  if (on) {
    CU_CHECK(drv.unmap(base_ + body_, granule_));
  } else {
    CU_CHECK(drv.map(base_ + body_, granule_, 0, tail_handle_, 0));
    CUmemAccessDesc access{};
    access.location = device_prop().location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_CHECK(drv.set_access(base_ + body_, granule_, &access, 1));
  }
  fenced_ = on;
}

void FencedBuffer::poison_tail(DType t) {
  if (bytes_ == 0) return;
  if (vmm_) {
    if (fenced_) return;
    fill_poison(reinterpret_cast<void*>(base_ + body_), granule_, t, nullptr);
  } else {
    fill_poison(static_cast<char*>(plain_) + bytes_ / 16 * 16, 4096, t, nullptr);
  }
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

// --- GuardedBuffer -----------------------------------------------------------------------------

GuardedBuffer::GuardedBuffer(size_t bytes) : bytes_(bytes) {
  CUDA_CHECK(cudaMalloc(&base_, kGuardBefore + round_up(bytes, 16) + kGuardAfter));
}

GuardedBuffer::~GuardedBuffer() {
  if (base_) cudaFree(base_);
}

void GuardedBuffer::poison(DType t, cudaStream_t stream) {
  fill_poison(base_, kGuardBefore + round_up(bytes_, 16) + kGuardAfter, t, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

GuardedBuffer::GuardDamage GuardedBuffer::check_guards(DType t) const {
  GuardDamage d;
  const size_t size = dtype_size(t);
  const uint64_t want = poison_bits(t);
  std::vector<unsigned char> before(kGuardBefore), after(kGuardAfter);
  CUDA_CHECK(cudaMemcpy(before.data(), base_, kGuardBefore, cudaMemcpyDeviceToHost));
  // The guard after starts right after the last element (the rounding slack included).
  CUDA_CHECK(
      cudaMemcpy(after.data(), static_cast<char*>(base_) + kGuardBefore + bytes_, kGuardAfter, cudaMemcpyDeviceToHost));
  auto changed = [&](const unsigned char* p) {
    uint64_t b = 0;
    std::memcpy(&b, p, size);
    return b != want;
  };
  for (size_t at = 0; at + size <= before.size(); at += size) {
    if (changed(&before[at])) {
      ++d.before;
      d.last_before = static_cast<int64_t>(kGuardBefore - at);
    }
  }
  for (size_t at = 0; at + size <= after.size(); at += size) {
    if (changed(&after[at])) {
      if (d.first_after < 0) d.first_after = static_cast<int64_t>(at);
      ++d.after;
    }
  }
  return d;
}

// --- LegacyGate --------------------------------------------------------------------------------

namespace {
__global__ void gate_kernel(volatile int* flag, int* timeout_hit, unsigned long long limit_ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*flag == 0) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > limit_ns) {
      *timeout_hit = 1;
      return;
    }
    __nanosleep(1000);
  }
}
}  // namespace

LegacyGate::LegacyGate() {
  CUDA_CHECK(cudaHostAlloc(const_cast<int**>(&flag_), 2 * sizeof(int), cudaHostAllocMapped));
  timeout_hit_ = const_cast<int*>(flag_) + 1;
  flag_[0] = 0;
  timeout_hit_[0] = 0;
}

LegacyGate::~LegacyGate() {
  if (flag_) {
    flag_[0] = 1;
    cudaStreamSynchronize(cudaStreamLegacy);
    cudaFreeHost(const_cast<int*>(flag_));
  }
}

void LegacyGate::hold() {
  flag_[0] = 0;
  timeout_hit_[0] = 0;
  int* dflag = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&dflag, const_cast<int*>(flag_), 0));
  gate_kernel<<<1, 1, 0, cudaStreamLegacy>>>(dflag, dflag + 1, 2000000000ull);  // at most 2 s
  WB_CHECK_LAUNCH();
}

void LegacyGate::release() { flag_[0] = 1; }
bool LegacyGate::timed_out() const { return timeout_hit_[0] != 0; }

}  // namespace wb
