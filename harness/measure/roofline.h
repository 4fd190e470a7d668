// Roofline arithmetic: spec peaks from device attributes and a per-architecture table,
// achieved rates, and the share of the roofline an op reached.
#pragma once
#include <string>

namespace wb {

// Which compute peak an op's FLOPs run on.
enum class Peak { FP32, F16Tensor, BF16Tensor, I8Tensor };
const char* peak_name(Peak p);

// Per-SM, per-clock throughput of one architecture (dense, no sparsity), from the
// vendors' published architecture whitepapers. Tensor rates are for FP32 accumulate.
struct ArchRates {
  int fp32_lanes = 0;        // FP32 FMA lanes per SM (each FMA is 2 FLOPs)
  int f16_tensor_flops = 0;  // FP16/BF16 tensor FLOPs per SM per clock (0: none)
  int bf16_tensor_flops = 0;
  int i8_tensor_ops = 0;  // INT8 tensor ops per SM per clock (0: none)
  bool known = false;     // false: guessed from the nearest older architecture
};
ArchRates arch_rates(int major, int minor);

// Ceilings of one device: memory bandwidth in GB/s and peaks in TFLOPS (TOPS for INT8).
struct Ceilings {
  double dram_gbps = 0;
  double fp32_tflops = 0;
  double f16_tflops = 0;
  double bf16_tflops = 0;
  double i8_tops = 0;
  double compute(Peak p) const;  // 0 when unknown
};

// Spec ceilings: DRAM = 2 (double data rate) * memory clock * bus width; compute =
// rate per SM per clock * SMs * boost clock.
Ceilings spec_ceilings(int major, int minor, int sms, double sm_clock_khz, double mem_clock_khz, int bus_width_bits);

// Roofline share: the time the op cannot beat on these ceilings (its bytes at full
// bandwidth, or its FLOPs at full compute, whichever is longer) over the time it took.
// 100 means the op ran at the roofline. Returns 0 when no ceiling applies.
double roofline_pct(double bytes, double flops, Peak peak, double seconds, const Ceilings& c);

// A result above the spec roofline is impossible: a timing or byte-count error.
bool implausible(double roofline_pct_of_spec);

}  // namespace wb
