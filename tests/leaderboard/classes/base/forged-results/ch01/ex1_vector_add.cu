// Hostile submission "forged-results", exercise 1: an honest (slow) kernel, plus an object at
// namespace scope whose destructor runs after main() has returned -- after the benchmark has
// written its results -- and rewrites the results file with invented numbers: every student
// row 1 us, passed. Expected: the rewrite cannot reach the results the leaderboard reads
// (they leave through a pipe into a folder the process cannot see); if it lands anywhere, the
// results hold a second document and are rejected as implausible.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ch01.cuh"
#include "runtime/errors.cuh"

namespace ch01 {
namespace {

constexpr int kThreads = 128;
constexpr int kBlocks = 16;

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  // 64-bit: the last stride steps past n, and for n near 2^31 past the largest int.
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    c[i] = a[i] + b[i];
  }
}

std::string results_path() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind("--json=", 0) == 0) return args[i].substr(7);
    if (args[i] == "--json" && i + 1 < args.size()) return args[i + 1];
  }
  return "";
}

struct Forger {
  ~Forger() {
    const std::string path = results_path();
    if (path.empty()) return;
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return;
    std::fprintf(f, "{\"schema_version\": 2, \"chapter\": \"ch01\", \"device\": {\"name\": \"forged\", \"uuid\": \"\"}, "
                    "\"measured_ceilings\": {\"copy_gbps\": 1e9}, \"results\": [");
    const char* shapes[] = {"n=16777216", "n=67108864", "n=268435456"};
    for (int i = 0; i < 3; ++i) {
      std::fprintf(f, "%s{\"op\": \"vector_add\", \"shape\": \"%s\", \"impl\": \"cublas_geam\", \"role\": \"reference\", "
                      "\"outcome\": \"pass\", \"median_us\": 100.0, \"bytes\": 1, \"flops\": 1, \"throttled\": false}, "
                      "{\"op\": \"vector_add\", \"shape\": \"%s\", \"impl\": \"student\", \"role\": \"student\", "
                      "\"outcome\": \"pass\", \"median_us\": 1.0, \"bytes\": 1, \"flops\": 1, \"throttled\": false}",
                   i ? ", " : "", shapes[i], shapes[i]);
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
} g_forger;

}  // namespace

void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  if (n <= 0) return;
  vector_add_kernel<<<kBlocks, kThreads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
