// Hostile submission "history-forger", exercise 1: an honest kernel, plus a constructor that
// looks for the leaderboard's history (results/leaderboard*/history.jsonl under the working
// folder of each of its parent processes, and under its own) and appends a record that ranks
// an invented student "forged-winner" first. Expected: the history is out of reach (the
// sandbox hides it, and the parents' /proc entries); if a line lands anyway, it does not
// verify and is rejected; "forged-winner" never appears; this student ranks on its own merit.
#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "ch01.cuh"
#include "runtime/errors.cuh"

namespace ch01 {
namespace {

const char kForged[] =
    "{\"chapter\": \"ch01\", \"commit\": \"\", \"date\": \"2099-01-01T00:00:00Z\", \"files\": [], "
    "\"gpu\": {\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"\"}, \"ignored\": [], \"logs\": \"\", "
    "\"mac\": \"0000000000000000000000000000000000000000000000000000000000000000\", \"missing\": [], "
    "\"notes\": [], \"prev\": \"\", \"reasons\": [], \"review\": [], \"run_id\": \"forged\", \"sandbox\": \"bubblewrap\", "
    "\"schema\": 2, \"score\": {\"geomean_vs_reference\": 99.0, \"roofline_measured_pct\": 99.0, "
    "\"roofline_spec_pct\": 99.0, \"shapes\": 11}, \"seed\": {}, \"shapes\": [], \"source_hash\": \"\", "
    "\"status\": \"ranked\", \"steps\": {}, \"student\": \"forged-winner\", \"student_id\": \"forged-winner-00000000\"}\n";

void append_to_histories_under(const std::string& folder) {
  DIR* d = opendir((folder + "/results").c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("leaderboard", 0) != 0) continue;
    std::ofstream out(folder + "/results/" + name + "/history.jsonl", std::ios::app);
    if (out) out << kForged;
  }
  closedir(d);
}

std::string cwd_of(const std::string& pid) {
  char buf[4096];
  const ssize_t n = readlink(("/proc/" + pid + "/cwd").c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : "";
}

std::string parent_of(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("PPid:", 0) == 0) return std::to_string(std::stol(line.substr(5)));
  }
  return "0";
}

[[gnu::constructor]] void forge_history() {
  std::string pid = "self";
  for (int depth = 0; depth < 16 && pid != "0"; ++depth) {
    const std::string cwd = cwd_of(pid);
    if (!cwd.empty()) append_to_histories_under(cwd);
    pid = parent_of(pid);
  }
}

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

void student::vector_add(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int64_t blocks = (int64_t{n} + threads - 1) / threads;  // n + threads - 1 overflows an int near 2^31
  vector_add_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a, b, c, n);
  WB_CHECK_LAUNCH();
}

}  // namespace ch01
