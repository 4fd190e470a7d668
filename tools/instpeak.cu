// instpeak: the throughput of single instructions, with no memory traffic at all — the
// ceiling a kernel built on that instruction cannot pass, however good its data movement.
//
//   build/<preset>/bin/instpeak [--device=N] [--json]
//
//   ffma      FP32 fused multiply-add on the CUDA cores           (chapter 4's SGEMM)
//   mma.sync  m16n8k16 FP16 and BF16 -> FP32, m16n8k8 TF32 -> FP32, m16n8k32 INT8 -> INT32
//             (chapter 5's v5, sm_80+), m16n8k32 FP8 E4M3 -> FP32 (sm_89+): the measured
//             column of the precision table (docs/precision.md)
//
// How: every warp of a full GPU (8 blocks of 256 threads per SM) runs kChains independent
// accumulator chains for kIters rounds, so the pipeline always has work that does not wait
// on the previous result. The operands come from a seeded buffer (never constants the
// compiler could fold) and every accumulator is written out at the end (so no work is
// dead). The time is the best of 5 launches after a warm-up; FLOPs count 2 per multiply-add.
//
// Why it matters: chapter 5 compares v5 (mma.sync) with cuBLAS, which on Hopper uses
// wgmma. If mma.sync itself tops out well below wgmma, this number says so.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/buffers.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/options.h"

namespace {

constexpr int kThreads = 256, kBlocksPerSm = 8, kChains = 8, kIters = 4096;

__global__ void __launch_bounds__(kThreads) ffma_peak(const float* in, float* out) {
  float acc[kChains];
  const float a = in[threadIdx.x % 32], b = in[32 + threadIdx.x % 32];
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc[c] = in[64 + c];
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int rep = 0; rep < 8; ++rep)
#pragma unroll
      for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], a, b);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += acc[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
constexpr double kFfmaFlops = 2.0 * kIters * 8 * kChains;  // per thread

enum class Mma { f16, bf16, tf32, s8, e4m3 };

// One mma.sync of the shape and types in `instr`: D += A B on the registers of mma_step.
#define WB_MMA_STEP(instr)                                                      \
  asm volatile(instr " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" \
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])                 \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

template <Mma kType>
__device__ __forceinline__ void mma_step(uint32_t (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kType == Mma::f16) {
    WB_MMA_STEP("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
  } else if constexpr (kType == Mma::bf16) {
    WB_MMA_STEP("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  } else if constexpr (kType == Mma::tf32) {
    WB_MMA_STEP("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
  } else if constexpr (kType == Mma::s8) {
    WB_MMA_STEP("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32");
  } else {
#if __CUDA_ARCH__ >= 890
    WB_MMA_STEP("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32");
#endif
  }
#endif
}
#undef WB_MMA_STEP

template <Mma kType>
__global__ void __launch_bounds__(kThreads) mma_peak(const uint32_t* in, uint32_t* out) {
  const int lane = threadIdx.x % 32;
  uint32_t a[4], d[kChains][4];
#pragma unroll
  for (int e = 0; e < 4; ++e) a[e] = in[lane * 4 + e];
  const uint32_t b0 = in[128 + lane], b1 = in[160 + lane];
#pragma unroll
  for (int c = 0; c < kChains; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) d[c][e] = 0;  // the accumulators' start; the inputs are not zero
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) mma_step<kType>(d[c], a, b0, b1);
  }
  uint32_t s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s ^= d[c][0] ^ d[c][1] ^ d[c][2] ^ d[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// Per warp: kIters * kChains instructions of m16n8k8 (2048 FLOPs), m16n8k16 (4096) or
// m16n8k32 (8192).
template <Mma kType>
constexpr double kMmaFlopsPerWarp = double(kIters) * kChains*(kType == Mma::s8 || kType == Mma::e4m3 ? 8192.0
                                                              : kType == Mma::tf32                   ? 2048.0
                                                                                                     : 4096.0);

struct Result {
  std::string name, unit;
  double rate = 0;  // TFLOPS or TOPS
};

// Best of 5 timed launches after one warm-up, in milliseconds.
template <class Launch>
double best_ms(Launch launch) {
  wb::Event start, stop;
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    start.record(nullptr);
    launch();
    stop.record(nullptr);
    CUDA_CHECK(cudaEventSynchronize(stop.get()));
    best = std::min(best, double(stop.ms_since(start)));
  }
  return best;
}

// One mma.sync shape's rate over the whole GPU (`warps` warps in `blocks` blocks), in
// TFLOPS (TOPS for int8).
template <Mma kType>
double mma_rate(int blocks, double warps, const wb::DeviceBuffer<uint32_t>& in, wb::DeviceBuffer<uint32_t>& out) {
  const double ms = best_ms([&] {
    mma_peak<kType><<<blocks, kThreads>>>(in.data(), out.data());
    WB_CHECK_LAUNCH();
  });
  return kMmaFlopsPerWarp<kType> * warps / (ms * 1e-3) / 1e12;
}

std::vector<Result> measure(const wb::DeviceInfo& d) {
  const int blocks = d.sms * kBlocksPerSm, threads = blocks * kThreads;
  // Seeded, non-zero operands: small values so that nothing overflows to inf or NaN.
  std::vector<uint32_t> host(256);
  uint32_t x = 0x9e3779b9u;
  for (auto& v : host) {
    x = x * 1664525u + 1013904223u;
    v = 0x3c003c00u ^ (x & 0x00ff00ffu);  // two FP16/BF16-ish small values, or four small int8
  }
  std::vector<float> hostf(128);
  for (size_t i = 0; i < hostf.size(); ++i) hostf[i] = 0.5f + 1e-3f * float(i);
  wb::DeviceBuffer<uint32_t> in(host), out(threads);
  wb::DeviceBuffer<float> inf(hostf), outf(threads);

  std::vector<Result> r;
  const double warps = double(threads) / 32;
  double ms = best_ms([&] {
    ffma_peak<<<blocks, kThreads>>>(inf.data(), outf.data());
    WB_CHECK_LAUNCH();
  });
  r.push_back({"ffma fp32", "TFLOPS", kFfmaFlops * threads / (ms * 1e-3) / 1e12});
  if (d.major >= 8) {
    r.push_back({"mma.sync m16n8k16 fp16->fp32", "TFLOPS", mma_rate<Mma::f16>(blocks, warps, in, out)});
    r.push_back({"mma.sync m16n8k16 bf16->fp32", "TFLOPS", mma_rate<Mma::bf16>(blocks, warps, in, out)});
    r.push_back({"mma.sync m16n8k32 int8->int32", "TOPS", mma_rate<Mma::s8>(blocks, warps, in, out)});
    r.push_back({"mma.sync m16n8k8 tf32->fp32", "TFLOPS", mma_rate<Mma::tf32>(blocks, warps, in, out)});
  }
  if (d.major * 10 + d.minor >= 89) {
    r.push_back({"mma.sync m16n8k32 fp8 e4m3->fp32", "TFLOPS", mma_rate<Mma::e4m3>(blocks, warps, in, out)});
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t device = 0;
  bool json = false;
  CLI::App app("Measures the peak throughput of FFMA and mma.sync, with no memory traffic.", "instpeak");
  wb::cli::conventions(app);
  app.add_option("--device", device, "which GPU (default 0)")->transform(wb::cli::whole_number(0, 1024));
  app.add_flag("--json", json, "print JSON instead of text");
  if (const auto status = wb::cli::parse_or_exit(app, argc, argv)) return *status;
  try {
    if (const int code = wb::select_tool_device("instpeak", device)) return code;
    const wb::DeviceInfo d = wb::query_device(static_cast<int>(device));
    const auto results = measure(d);
    if (json) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& r : results) list.push_back({{"instruction", r.name}, {"unit", r.unit}, {"rate", r.rate}});
      const nlohmann::ordered_json j = {{"gpu", d.name}, {"peaks", list}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("instruction peaks on %s (%d SMs; no memory traffic)\n", d.name.c_str(), d.sms);
      for (const auto& r : results) std::printf("  %-32s %8.1f %s\n", r.name.c_str(), r.rate, r.unit.c_str());
      if (d.major < 8) std::printf("  (mma.sync needs sm_80 or newer: not measured)\n");
      if (d.major >= 8 && d.major * 10 + d.minor < 89)
        std::printf("  (FP8 mma.sync needs sm_89 or newer: not measured)\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "instpeak: %s\n", e.what());
    return 1;
  }
  return 0;
}
