#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "device/pdl.cuh"

namespace wb {

std::optional<std::string> gpu_missing_reason() {
  static const std::optional<std::string> reason = []() -> std::optional<std::string> {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice) {
      // With no NVIDIA driver at all, CUDA reports an "insufficient" driver: that is not
      // a driver to upgrade, it is no GPU.
      const bool driver_present =
          std::filesystem::exists("/dev/nvidiactl") || std::filesystem::exists("/proc/driver/nvidia");
      if (!driver_present) return std::string("no GPU: this machine has no NVIDIA GPU or driver");
    }
    if (err != cudaSuccess) {
      return std::string("no usable CUDA GPU: cudaGetDeviceCount returned ") + cudaGetErrorName(err) + " (" +
             cudaGetErrorString(err) + "); GPU tests need an NVIDIA GPU and a driver for CUDA " +
             std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) + " or newer";
    }
    if (count == 0) return std::string("no CUDA GPU on this machine; GPU tests need an NVIDIA GPU");
    return std::nullopt;
  }();
  return reason;
}

int select_tool_device(const char* tool, long long index) {
  if (const auto reason = gpu_missing_reason()) {
    std::fprintf(stderr, "%s: %s\n", tool, reason->c_str());
    return 1;
  }
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count) {
    std::fprintf(stderr, "%s: --device=%lld, but this machine has %d GPU(s) (0..%d)\n", tool, index, count, count - 1);
    return 2;
  }
  CUDA_CHECK(cudaSetDevice(static_cast<int>(index)));
  return 0;
}

namespace {

DeviceInfo read_device(int device) {
  DeviceInfo d;
  d.index = device;
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  d.name = p.name;
  char uuid[40];
  std::snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                (unsigned char)p.uuid.bytes[0], (unsigned char)p.uuid.bytes[1], (unsigned char)p.uuid.bytes[2],
                (unsigned char)p.uuid.bytes[3], (unsigned char)p.uuid.bytes[4], (unsigned char)p.uuid.bytes[5],
                (unsigned char)p.uuid.bytes[6], (unsigned char)p.uuid.bytes[7], (unsigned char)p.uuid.bytes[8],
                (unsigned char)p.uuid.bytes[9], (unsigned char)p.uuid.bytes[10], (unsigned char)p.uuid.bytes[11],
                (unsigned char)p.uuid.bytes[12], (unsigned char)p.uuid.bytes[13], (unsigned char)p.uuid.bytes[14],
                (unsigned char)p.uuid.bytes[15]);
  d.uuid = uuid;
  d.major = p.major;
  d.minor = p.minor;
  d.sms = p.multiProcessorCount;
  d.global_mem_bytes = p.totalGlobalMem;
  d.l2_bytes = p.l2CacheSize;
  d.smem_per_block = static_cast<int>(p.sharedMemPerBlock);
  d.smem_per_block_optin = static_cast<int>(p.sharedMemPerBlockOptin);
  d.smem_per_sm = static_cast<int>(p.sharedMemPerMultiprocessor);
  d.regs_per_block = p.regsPerBlock;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.warp_size = p.warpSize;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  // Clocks through attributes: the cudaDeviceProp clock fields are gone in CUDA 13.
  int sm_khz = 0, mem_khz = 0, bus = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, device));
  d.sm_clock_khz = sm_khz;
  d.mem_clock_khz = mem_khz;
  d.bus_width_bits = bus;
  CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  d.spec = spec_ceilings(d.major, d.minor, d.sms, d.sm_clock_khz, d.mem_clock_khz, d.bus_width_bits);
  d.spec_rates_known = arch_rates(d.major, d.minor).known;
  return d;
}

}  // namespace

namespace {

// cudaGetDeviceProperties reads every attribute of the device and costs far more than a
// small test case: each device is read once per process (its properties do not change). The
// map's entries never move, so the record can be read after the lock is released.
const DeviceInfo& device_record(int device) {
  if (device < 0) CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex m;
  static std::map<int, DeviceInfo> seen;
  std::lock_guard<std::mutex> lock(m);
  auto it = seen.find(device);
  if (it == seen.end()) it = seen.emplace(device, read_device(device)).first;
  return it->second;
}

}  // namespace

DeviceInfo query_device(int device) { return device_record(device); }

int sm_count() { return device_record(-1).sms; }

namespace {
thread_local int pdl_chains = 0;  // PdlChain scopes open on this thread
}  // namespace

PdlChain::PdlChain() { ++pdl_chains; }
PdlChain::~PdlChain() { --pdl_chains; }
bool PdlChain::active() { return pdl_chains > 0; }

// Asked at every programmatic launch: a map lookup under a lock, small next to the launch.
bool pdl_enabled() {
  static const bool off = [] {
    const char* v = std::getenv("WORKBOOK_PDL");
    return v != nullptr && std::strcmp(v, "0") == 0;
  }();
  if (off) return false;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return query_device(device).major >= 9;  // (query_device reads each device once)
}

}  // namespace wb
