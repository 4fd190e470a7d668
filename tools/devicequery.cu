// devicequery: prints the GPU, its limits, which tensor-core and copy paths it has, and
// its spec peaks (and, with --measure, the ceilings measured on it).
//
//   build/<preset>/tools/devicequery [--device=N] [--measure] [--json]
#include <cstdio>

#include "measure/ceilings.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/options.h"
#include "report/results.h"

namespace {

const char* yes(bool b) { return b ? "yes" : "no"; }

void print_text(const wb::DeviceInfo& d, const wb::MeasuredCeilings* m) {
  std::printf("GPU %d: %s\n", d.index, d.name.c_str());
  std::printf("  compute capability   %s (sm_%d%d)\n", d.compute_capability().c_str(), d.major, d.minor);
  std::printf("  driver / runtime     CUDA %s / %s\n", wb::version_text(d.driver_version).c_str(),
              wb::version_text(d.runtime_version).c_str());
  std::printf("  SMs                  %d\n", d.sms);
  std::printf("  SM clock (peak)      %.0f MHz\n", d.sm_clock_khz / 1e3);
  std::printf("  memory               %.1f GiB, %d-bit bus at %.0f MHz\n", d.global_mem_bytes / 1073741824.0,
              d.bus_width_bits, d.mem_clock_khz / 1e3);
  std::printf("  L2 cache             %.1f MiB\n", d.l2_bytes / 1048576.0);
  std::printf("  shared memory        %d KiB per block (%d KiB opt-in), %d KiB per SM\n", d.smem_per_block / 1024,
              d.smem_per_block_optin / 1024, d.smem_per_sm / 1024);
  std::printf("  registers            %d per block, %d per SM\n", d.regs_per_block, d.regs_per_sm);
  std::printf("  threads              warp %d, %d per block, %d per SM\n", d.warp_size, d.max_threads_per_block,
              d.max_threads_per_sm);
  std::printf("  tensor-core paths    WMMA fp16 %s, WMMA bf16 %s, WMMA int8 %s, cp.async %s, TMA %s, wgmma %s\n",
              yes(d.has_wmma_f16()), yes(d.has_wmma_bf16()), yes(d.has_wmma_i8()), yes(d.has_cp_async()),
              yes(d.has_tma()), yes(d.has_wgmma()));
  std::printf("  spec peaks%s\n", d.spec_rates_known ? "" : " (architecture newer than the table: estimates)");
  std::printf("    DRAM bandwidth     %.0f GB/s\n", d.spec.dram_gbps);
  std::printf("    FP32 (CUDA cores)  %.1f TFLOPS\n", d.spec.fp32_tflops);
  std::printf("    FP16 tensor        %.0f TFLOPS\n", d.spec.f16_tflops);
  std::printf("    BF16 tensor        %.0f TFLOPS\n", d.spec.bf16_tflops);
  std::printf("    INT8 tensor        %.0f TOPS\n", d.spec.i8_tops);
  if (m) {
    const auto& v = m->values;
    std::printf("  measured ceilings (%s %s)\n", m->from_cache ? "cached in" : "measured now, cached in",
                m->cache_path.c_str());
    std::printf("    device copy        %.0f GB/s (%.0f%% of spec)\n", v.dram_gbps,
                100 * v.dram_gbps / d.spec.dram_gbps);
    std::printf("    cuBLAS FP32 4096^3 %.1f TFLOPS (TF32 off)\n", v.fp32_tflops);
    std::printf("    cuBLAS FP16 8192^3 %.0f TFLOPS\n", v.f16_tflops);
    std::printf("    cuBLAS BF16 8192^3 %.0f TFLOPS\n", v.bf16_tflops);
    std::printf("    cuBLAS INT8 8192^3 %.0f TOPS\n", v.i8_tops);
  }
}

// The device description (not a results file: no measurement of a kernel), with the
// ceilings written as the results files write them.
wb::results::Json to_json(const wb::DeviceInfo& d, const wb::MeasuredCeilings* m) {
  wb::results::Json j = {{"index", d.index},
                         {"name", d.name},
                         {"uuid", d.uuid},
                         {"compute_capability", d.compute_capability()},
                         {"driver", wb::version_text(d.driver_version)},
                         {"runtime", wb::version_text(d.runtime_version)},
                         {"sms", d.sms},
                         {"sm_clock_mhz", d.sm_clock_khz / 1e3},
                         {"mem_clock_mhz", d.mem_clock_khz / 1e3},
                         {"bus_width_bits", d.bus_width_bits},
                         {"global_mem_bytes", static_cast<uint64_t>(d.global_mem_bytes)},
                         {"l2_bytes", d.l2_bytes},
                         {"smem_per_block", d.smem_per_block},
                         {"smem_per_block_optin", d.smem_per_block_optin},
                         {"smem_per_sm", d.smem_per_sm},
                         {"regs_per_block", d.regs_per_block},
                         {"regs_per_sm", d.regs_per_sm}};
  j["paths"] = {{"wmma_fp16", d.has_wmma_f16()},
                {"wmma_bf16", d.has_wmma_bf16()},
                {"wmma_int8", d.has_wmma_i8()},
                {"cp_async", d.has_cp_async()},
                {"tma", d.has_tma()},
                {"wgmma", d.has_wgmma()}};
  j["spec"] = wb::results::spec_ceilings(d.spec);
  if (m) j["measured"] = wb::results::measured_ceilings(*m);
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t device = 0;
  bool json = false, measure = false, remeasure = false;
  CLI::App app("Prints the GPU, its limits, its tensor-core paths and its peaks.", "devicequery");
  wb::cli::conventions(app);
  app.add_option("--device", device, "which GPU (default 0)")->transform(wb::cli::whole_number(0, 1024));
  app.add_flag("--measure", measure, "also show the measured ceilings (measured once per GPU, then cached)");
  app.add_flag("--remeasure", remeasure, "measure the ceilings again, ignoring the cache");
  app.add_flag("--json", json, "print JSON instead of text");
  if (const auto status = wb::cli::parse_or_exit(app, argc, argv)) return *status;
  try {
    if (const int code = wb::select_tool_device("devicequery", device)) return code;
    const wb::DeviceInfo d = wb::query_device(static_cast<int>(device));
    wb::MeasuredCeilings m;
    if (measure || remeasure) m = wb::measured_ceilings(d, remeasure);
    const wb::MeasuredCeilings* mp = (measure || remeasure) ? &m : nullptr;
    if (json) {
      std::printf("%s\n", to_json(d, mp).dump(2).c_str());
    } else {
      print_text(d, mp);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "devicequery: %s\n", e.what());
    return 1;
  }
  return 0;
}
