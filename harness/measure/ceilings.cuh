// Ceilings measured on this GPU: a device-to-device copy (bytes read + written; the faster
// of cudaMemcpyAsync and a plain 16-byte-per-thread copy kernel) and a
// cuBLAS GEMM per data type. Measured once per device and cached (measure/ceilings_cache.h:
// ceilings-<gpu uuid>.json in the cache folder). Delete the file (or pass --remeasure) to
// measure again.
#pragma once
#include <string>

#include "runtime/device.cuh"
#include "measure/roofline.h"

namespace wb {

struct MeasuredCeilings {
  Ceilings values;  // 0 where a measurement was not possible
  std::string cache_path;
  bool from_cache = false;
};

MeasuredCeilings measured_ceilings(const DeviceInfo& dev, bool remeasure = false);

// The single measurements, also used by devicequery --measure.
double measure_copy_gbps();
double measure_gemm_tflops(Peak type, int n);  // n x n x n through cuBLAS; 0 if unsupported

}  // namespace wb
