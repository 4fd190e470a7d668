// ch08_memory — the device memory attention needs, unfused against fused, as the sequence
// grows: the unfused pipelines keep every head's Sq x Sk scores (and probabilities), which
// grows with S^2; the flash kernels keep q, k, v, o and lse, which grows with S.
//
//   build/ch08/bin/ch08_memory [--batch=1] [--heads=16] [--d=128] [--max-s=32768] [--json=FILE]
//
// The options are checked before the GPU is looked for (D a multiple of 8 up to 128, --max-s
// at least 1024, the --json folder exists); the JSON file appears only when the run is done.
//
// For S = 1024, 2048, ... max-s (Sq = Sk = S, no mask) and each implementation
//   BF16  cublas_unfused (reference, S in FP32 and P in BF16)   v4_flash_mma_sync (solution)
//   FP32  v1_unfused (solution, S in FP32)                     v3_flash_f32 (solution)
// it allocates the tensors and the implementation's buffer, fills the inputs, runs one call
// and reports the memory the call needed: device memory in use after the call minus before
// the tensors were allocated (cudaMemGetInfo). Each implementation is called once at S = 256
// first, so that its library handles and lazily loaded code are not counted. A size that does
// not fit in the free memory is reported as such, with what it would need, and not run.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <type_traits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cublas_attention.cuh"
#include "runtime/device.cuh"
#include "runtime/errors.cuh"
#include "runtime/options.h"
#include "runtime/output_file.h"
#include "ladder.cuh"

namespace {

using ch08::bf16;

// Deterministic, non-zero pseudo-random values in (-1, 1).
template <class T>
__global__ void fill_kernel(T* p, size_t n, uint32_t seed) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float x = (static_cast<float>(h & 0xFFFFFF) + 0.5f) / 8388608.0f - 1.0f;
    if constexpr (std::is_same_v<T, float>)
      p[i] = x;
    else
      p[i] = __float2bfloat16_rn(x);
  }
}

struct Impl {
  const char* name;
  bool bf16_io;
  std::function<size_t(int B, int H, int S)> scratch;
  std::function<void(void* q, void* k, void* v, void* o, float* lse, int B, int H, int S, int D, void* scratch)> run;
};

size_t used_bytes() {
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return total_b - free_b;
}
size_t free_bytes() {
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

struct Row {
  std::string impl;
  int S = 0;
  double tensors_mb = 0, scratch_mb = 0, measured_mb = -1;
  std::string note;
};

// One call of `im` at (B, H, S, D); measured_mb < 0 with a note when it does not fit or fails.
Row measure(const Impl& im, int B, int H, int S, int D) {
  Row row{im.name, S};
  const size_t elem = im.bf16_io ? sizeof(bf16) : sizeof(float);
  const size_t qkvo = static_cast<size_t>(B) * H * S * D * elem;
  const size_t lse_b = sizeof(float) * static_cast<size_t>(B) * H * S;
  const size_t scratch = im.scratch(B, H, S);
  row.tensors_mb = (4.0 * qkvo + lse_b) / 1e6;
  row.scratch_mb = scratch / 1e6;
  const double need = 4.0 * qkvo + lse_b + scratch;
  if (need + (512 << 20) > static_cast<double>(free_bytes())) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "does not fit: needs %.1f GB, %.1f GB free", need / 1e9, free_bytes() / 1e9);
    row.note = buf;
    return row;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const size_t before = used_bytes();
  std::vector<void*> bufs(4, nullptr);
  float* lse = nullptr;
  void* work = nullptr;
  for (auto& b : bufs) CUDA_CHECK(cudaMalloc(&b, qkvo));
  CUDA_CHECK(cudaMalloc(&lse, lse_b));
  if (scratch > 0) CUDA_CHECK(cudaMalloc(&work, scratch));
  for (int i = 0; i < 3; ++i) {
    const size_t n = qkvo / elem;
    if (im.bf16_io)
      fill_kernel<<<1024, 256>>>(static_cast<bf16*>(bufs[i]), n, 17u * (i + 1));
    else
      fill_kernel<<<1024, 256>>>(static_cast<float*>(bufs[i]), n, 17u * (i + 1));
    WB_CHECK_LAUNCH();
  }
  try {
    im.run(bufs[0], bufs[1], bufs[2], bufs[3], lse, B, H, S, D, work);
    CUDA_CHECK(cudaDeviceSynchronize());
    row.measured_mb = (used_bytes() - before) / 1e6;
  } catch (const std::exception& e) {
    row.note = std::string("failed: ") + e.what();
  }
  for (auto* b : bufs) cudaFree(b);
  cudaFree(lse);
  if (work != nullptr) cudaFree(work);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch_arg = 1, heads_arg = 16, d_arg = 128, max_s_arg = 32768;
  std::string json_path;
  CLI::App app(
      "The device memory attention needs, unfused against fused, for S = 1024, 2048, ... --max-s "
      "(Sq = Sk = S, no mask).",
      "ch08_memory");
  wb::cli::conventions(app);
  app.add_option("--batch", batch_arg, "batch size B (default 1)")->transform(wb::cli::whole_number(1, 4096));
  app.add_option("--heads", heads_arg, "heads H (default 16)")->transform(wb::cli::whole_number(1, 4096));
  app.add_option("--d", d_arg, "head size D: a multiple of 8 up to 128 (default 128)")
      ->transform(wb::cli::whole_number(8, 128));
  app.add_option("--max-s", max_s_arg, "the longest sequence, from 1024 (default 32768)")
      ->transform(wb::cli::whole_number(1024, 1 << 20));
  app.add_option("--json", json_path, "also write the rows to this file")->transform(wb::cli::not_empty());
  try {
    if (!wb::cli::parse(app, argc, argv)) return 0;
    if (d_arg % 8 != 0) {
      throw wb::UsageError("--d: " + std::to_string(d_arg) +
                           " is not a multiple of 8 (the kernels read rows in "
                           "16-byte pieces); give 64 or 128, for example");
    }
    if (!json_path.empty()) {
      if (auto why = wb::output_path_problem(json_path)) throw wb::UsageError("--json=" + json_path + ": " + *why);
    }
  } catch (const wb::UsageError& e) {
    return wb::cli::refuse(app, e.what());
  }
  if (auto reason = wb::gpu_missing_reason()) {
    std::printf("ch08_memory: %s: nothing to measure\n", reason->c_str());
    return 77;
  }
  const int B = static_cast<int>(batch_arg), H = static_cast<int>(heads_arg), D = static_cast<int>(d_arg);
  const int max_s = static_cast<int>(max_s_arg);
  const float scale = ch08::attention_scale(D);
  const std::vector<Impl> impls = {
      {"cublas_unfused (BF16)", true, [](int b, int h, int s) { return ch08::unfused::scratch_bytes_bf16(b, h, s, s); },
       [scale](void* q, void* k, void* v, void* o, float* lse, int b, int h, int s, int d, void* w) {
         ch08::unfused::attention_bf16(static_cast<const bf16*>(q), static_cast<const bf16*>(k),
                                       static_cast<const bf16*>(v), static_cast<bf16*>(o), lse, b, h, s, s, d, scale,
                                       false, w, nullptr);
       }},
      {"v4_flash_mma_sync (BF16)", true, [](int, int, int) { return size_t{0}; },
       [scale](void* q, void* k, void* v, void* o, float* lse, int b, int h, int s, int d, void* w) {
         ch08::solution::v4_attention_bf16(static_cast<const bf16*>(q), static_cast<const bf16*>(k),
                                           static_cast<const bf16*>(v), static_cast<bf16*>(o), lse, b, h, s, s, d,
                                           scale, false, w, nullptr);
       }},
      {"v1_unfused (FP32)", false, [](int b, int h, int s) { return ch08::scratch_bytes_f32(b, h, s, s); },
       [scale](void* q, void* k, void* v, void* o, float* lse, int b, int h, int s, int d, void* w) {
         ch08::solution::v1_attention_f32(static_cast<const float*>(q), static_cast<const float*>(k),
                                          static_cast<const float*>(v), static_cast<float*>(o), lse, b, h, s, s, d,
                                          scale, false, w, nullptr);
       }},
      {"v3_flash_f32 (FP32)", false, [](int, int, int) { return size_t{0}; },
       [scale](void* q, void* k, void* v, void* o, float* lse, int b, int h, int s, int d, void* w) {
         ch08::solution::v3_attention_f32(static_cast<const float*>(q), static_cast<const float*>(k),
                                          static_cast<const float*>(v), static_cast<float*>(o), lse, b, h, s, s, d,
                                          scale, false, w, nullptr);
       }},
  };

  const wb::DeviceInfo dev = wb::query_device();
  std::printf("ch08_memory on %s: B=%d H=%d D=%d, Sq = Sk = S, no mask; MB = 10^6 bytes\n", dev.name.c_str(), B, H, D);
  for (const auto& im : impls) measure(im, B, H, 256, D);  // warm-up: handles, code, workspaces
  std::printf("%-26s %7s %12s %12s %12s  %s\n", "impl", "S", "tensors MB", "buffer MB", "measured MB", "");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int S = 1024; S <= max_s; S *= 2) {
    for (const auto& im : impls) {
      const Row r = measure(im, B, H, S, D);
      if (r.measured_mb >= 0) {
        std::printf("%-26s %7d %12.1f %12.1f %12.1f\n", r.impl.c_str(), S, r.tensors_mb, r.scratch_mb, r.measured_mb);
      } else {
        std::printf("%-26s %7d %12.1f %12.1f %12s  %s\n", r.impl.c_str(), S, r.tensors_mb, r.scratch_mb, "-",
                    r.note.c_str());
      }
      rows.push_back({{"impl", r.impl},
                      {"S", S},
                      {"tensors_mb", r.tensors_mb},
                      {"buffer_mb", r.scratch_mb},
                      {"measured_mb", r.measured_mb >= 0 ? nlohmann::ordered_json(r.measured_mb) : nullptr},
                      {"note", r.note}});
    }
  }
  if (!json_path.empty()) {
    const nlohmann::ordered_json out = {{"device", dev.name}, {"B", B}, {"H", H}, {"D", D}, {"rows", std::move(rows)}};
    wb::write_file_atomically(json_path, out.dump(2) + "\n");
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
}
