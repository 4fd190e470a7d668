#include "measure/roofline.h"

#include <algorithm>

#include "runtime/lookup.h"

namespace wb {

namespace {
constexpr std::pair<Peak, const char*> kPeakNames[] = {{Peak::FP32, "fp32"},
                                                       {Peak::F16Tensor, "fp16-tensor"},
                                                       {Peak::BF16Tensor, "bf16-tensor"},
                                                       {Peak::I8Tensor, "int8-tensor"}};
}  // namespace

const char* peak_name(Peak p) { return lookup(kPeakNames, p, "?"); }

ArchRates arch_rates(int major, int minor) {
  const int cc = major * 10 + minor;
  // Volta/Turing: 64 FP32 lanes, 8 tensor cores (1024 FP16 FLOPs/clk), no BF16.
  // Turing adds INT8 tensor ops at twice the FP16 rate.
  // Ampere GA100: 64 lanes, 2048 FP16/BF16 FLOPs/clk, INT8 4096.
  // GA10x/Ada: 128 lanes, 1024 FP16/BF16 (FP32 accumulate, professional parts).
  // Hopper GH100: 128 lanes, 4096 FP16/BF16, INT8 8192.
  // Blackwell: 128 lanes, 8192 FP16/BF16, INT8 16384 (datacenter parts).
  if (cc >= 100) return {128, 8192, 8192, 16384, cc == 100};
  if (cc >= 90) return {128, 4096, 4096, 8192, cc == 90};
  if (cc >= 86) return {128, 1024, 1024, 2048, cc == 86 || cc == 89};
  if (cc >= 80) return {64, 2048, 2048, 4096, cc == 80};
  if (cc >= 75) return {64, 1024, 0, 2048, cc == 75};
  if (cc >= 70) return {64, 1024, 0, 0, cc == 70 || cc == 72};
  return {64, 0, 0, 0, false};
}

double Ceilings::compute(Peak p) const {
  switch (p) {
    case Peak::FP32:
      return fp32_tflops;
    case Peak::F16Tensor:
      return f16_tflops;
    case Peak::BF16Tensor:
      return bf16_tflops;
    case Peak::I8Tensor:
      return i8_tops;
  }
  return 0;
}

Ceilings spec_ceilings(int major, int minor, int sms, double sm_clock_khz, double mem_clock_khz, int bus_width_bits) {
  const ArchRates r = arch_rates(major, minor);
  const double per_clock_to_tera = sms * sm_clock_khz * 1e3 / 1e12;
  Ceilings c;
  c.dram_gbps = 2.0 * mem_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
  c.fp32_tflops = 2.0 * r.fp32_lanes * per_clock_to_tera;
  c.f16_tflops = r.f16_tensor_flops * per_clock_to_tera;
  c.bf16_tflops = r.bf16_tensor_flops * per_clock_to_tera;
  c.i8_tops = r.i8_tensor_ops * per_clock_to_tera;
  return c;
}

double roofline_pct(double bytes, double flops, Peak peak, double seconds, const Ceilings& c) {
  if (seconds <= 0) return 0;
  double floor_s = 0;
  if (bytes > 0 && c.dram_gbps > 0) floor_s = bytes / (c.dram_gbps * 1e9);
  const double compute = c.compute(peak);
  if (flops > 0 && compute > 0) floor_s = std::max(floor_s, flops / (compute * 1e12));
  return 100.0 * floor_s / seconds;
}

bool implausible(double roofline_pct_of_spec) { return roofline_pct_of_spec > 100.0; }

}  // namespace wb
