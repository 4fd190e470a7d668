// What GPU is this, what can it do, and what are its spec ceilings.
#pragma once
#include <optional>
#include <string>

#include "measure/roofline.h"

namespace wb {

// Why no GPU work can run here ("no CUDA device: cudaGetDeviceCount returned
// cudaErrorNoDevice ..."), or nullopt when a usable GPU is present. Cached.
std::optional<std::string> gpu_missing_reason();

struct DeviceInfo {
  int index = 0;
  std::string name, uuid;
  int major = 0, minor = 0;
  int sms = 0;
  double sm_clock_khz = 0, mem_clock_khz = 0;  // peak (boost) clocks
  int bus_width_bits = 0;
  size_t global_mem_bytes = 0;
  int l2_bytes = 0;
  int smem_per_block = 0, smem_per_block_optin = 0, smem_per_sm = 0;
  int regs_per_block = 0, regs_per_sm = 0;
  int warp_size = 0, max_threads_per_block = 0, max_threads_per_sm = 0;
  int driver_version = 0, runtime_version = 0;
  Ceilings spec;
  bool spec_rates_known = false;  // false: architecture newer than the table

  // Tensor-core and copy paths the hardware has (and this build can reach).
  bool has_wmma_f16() const { return major >= 7; }
  bool has_wmma_bf16() const { return major >= 8; }
  bool has_wmma_i8() const { return major * 10 + minor >= 72; }
  bool has_cp_async() const { return major >= 8; }
  bool has_tma() const { return major >= 9; }
  bool has_wgmma() const { return major == 9 && minor == 0; }  // sm_90a only
  std::string compute_capability() const { return std::to_string(major) + "." + std::to_string(minor); }
};

DeviceInfo query_device(int device = -1);  // -1: the current device
// The current device's SM count, from the same record (no copy of it): launchers call it on
// every launch.
int sm_count();

// For command-line tools: checks that a GPU is visible and that `index` names one, then
// makes it current. Returns 0, or prints "<tool>: <why>" to stderr and returns the exit
// code to use (1: no usable GPU, 2: no GPU with that index).
int select_tool_device(const char* tool, long long index);
std::string version_text(int cuda_version);  // 13000 -> "13.0"

}  // namespace wb
